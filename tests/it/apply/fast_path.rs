//! The fast pick path (undeltified pack written by bport, git-order tree walks, borrowed blobs) gives
//! git's commits: renames (pure and with edits), mode changes, binary files, submodule pointer updates and files
//! over 1 MB, merged onto a branch that drifted, compared commit for commit with `git cherry-pick -x`.

use super::*;
use crate::support::oracle::git_ok;
use git2::build::TreeUpdateBuilder;
use git2::{FileMode, Oid, Repository, Signature, Time};

/// One edit of a tree: write `path` with these bytes and mode, point a gitlink at a commit, or delete it.
enum Edit<'a> {
    File(&'a str, Vec<u8>, FileMode),
    Gitlink(&'a str, Oid),
    Delete(&'a str),
}

/// Commits `edits` on top of `parent` (or as a root) with author time `t`, returning the commit; refs untouched.
fn commit(
    repo: &Repository,
    parent: Option<Oid>,
    t: i64,
    message: &str,
    edits: &[Edit<'_>],
) -> Oid {
    let base = match parent {
        Some(p) => repo.find_commit(p).unwrap().tree().unwrap(),
        None => repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap(),
    };
    let mut b = TreeUpdateBuilder::new();
    for e in edits {
        match e {
            Edit::File(path, bytes, mode) => b.upsert(*path, repo.blob(bytes).unwrap(), *mode),
            Edit::Gitlink(path, oid) => b.upsert(*path, *oid, FileMode::Commit),
            Edit::Delete(path) => b.remove(*path),
        };
    }
    let tree = repo
        .find_tree(b.create_updated(repo, &base).unwrap())
        .unwrap();
    let sig = Signature::new("A U Thor", "author@example.com", &Time::new(t, 120)).unwrap();
    let parents: Vec<git2::Commit<'_>> = parent
        .map(|p| repo.find_commit(p).unwrap())
        .into_iter()
        .collect();
    let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repo.commit(None, &sig, &sig, message, &tree, &parents)
        .unwrap()
}

/// `n` lines of text, about 60 bytes each.
fn text(n: usize, tag: &str) -> Vec<u8> {
    (0..n)
        .map(|i| format!("{tag} line {i:07} of a file that is long enough to matter\n"))
        .collect::<String>()
        .into_bytes()
}

/// Bytes no text heuristic takes for text (NULs), `n` of them, varied by `seed`.
fn binary(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8 & 0x7f)
        .map(|b| if b % 5 == 0 { 0 } else { b })
        .collect()
}

fn replace_line(bytes: &[u8], line: usize, with: &str) -> Vec<u8> {
    let s = String::from_utf8(bytes.to_vec()).unwrap();
    let mut lines: Vec<String> = s.lines().map(|l| format!("{l}\n")).collect();
    lines[line] = format!("{with}\n");
    lines.concat().into_bytes()
}

/// The fast path gives git's trees and commits (authors, dates, messages, `-x`) for a series
/// with renames, mode changes, binary files, submodule pointer updates and files over 1 MB.
#[test]
fn fast_path_equals_git_on_renames_modes_binaries_gitlinks_and_big_files() {
    skip_unless!(has_git());
    let t = TestRepo::new();
    let repo = &t.repo;
    let big_text = text(20_000, "big"); // ~1.2 MB
    let big_bin = binary(1_500_000, 1);
    let (sub1, sub2) = (
        Oid::from_str("1111111111111111111111111111111111111111").unwrap(),
        Oid::from_str("2222222222222222222222222222222222222222").unwrap(),
    );
    let a_c = text(300, "a.c");
    let base = commit(
        repo,
        None,
        1_600_000_000,
        "base",
        &[
            Edit::File("src/a.c", a_c.clone(), FileMode::Blob),
            Edit::File("old/name.c", text(50, "name.c"), FileMode::Blob),
            Edit::File(
                "tools/run.sh",
                b"#!/bin/sh\necho run\n".to_vec(),
                FileMode::Blob,
            ),
            Edit::File("data/big.txt", big_text.clone(), FileMode::Blob),
            Edit::File("data/big.bin", big_bin.clone(), FileMode::Blob),
            Edit::File("doc/gone.txt", b"to be deleted\n".to_vec(), FileMode::Blob),
            Edit::Gitlink("vendor/lib", sub1),
        ],
    );
    // Upstream: one commit per kind of change.
    let mut up = base;
    let mut time = 1_600_000_100;
    let mut step = |msg: &str, edits: &[Edit<'_>]| {
        time += 60;
        up = commit(repo, Some(up), time, msg, edits);
    };
    step(
        "move name.c\n\nA pure rename: the blob is unchanged.\n",
        &[
            Edit::Delete("old/name.c"),
            Edit::File("new/name.c", text(50, "name.c"), FileMode::Blob),
        ],
    );
    step(
        "rename a.c to b.c with an edit",
        &[
            Edit::Delete("src/a.c"),
            Edit::File(
                "src/b.c",
                replace_line(&a_c, 10, "upstream edit at 10"),
                FileMode::Blob,
            ),
        ],
    );
    step(
        "tools: make run.sh executable",
        &[Edit::File(
            "tools/run.sh",
            b"#!/bin/sh\necho run\n".to_vec(),
            FileMode::BlobExecutable,
        )],
    );
    let mut bin2 = big_bin.clone();
    bin2[700_000..700_100].copy_from_slice(&binary(100, 9));
    step(
        "data: new big.bin",
        &[Edit::File("data/big.bin", bin2, FileMode::Blob)],
    );
    step(
        "vendor/lib: update the submodule",
        &[Edit::Gitlink("vendor/lib", sub2)],
    );
    let big_up = replace_line(&big_text, 19_000, "upstream edit at 19000");
    step(
        "data: edit big.txt near its end",
        &[Edit::File("data/big.txt", big_up.clone(), FileMode::Blob)],
    );
    // The same file again at once: this merge's base is the previous commit's version and its "ours" the previous
    // merge's result, both served from bport's blob cache and in-memory blobs, and the result goes into the pack
    // as a delta against that earlier merge.
    step(
        "data: edit big.txt again",
        &[Edit::File(
            "data/big.txt",
            replace_line(&big_up, 19_500, "upstream edit at 19500"),
            FileMode::Blob,
        )],
    );
    step(
        "add a small binary, delete gone.txt\n\nSigned-off-by: A U Thor <author@example.com>\n",
        &[
            Edit::File("data/small.bin", binary(3000, 4), FileMode::Blob),
            Edit::Delete("doc/gone.txt"),
        ],
    );
    repo.reference("refs/heads/upstream", up, true, "test")
        .unwrap();
    // The branch drifted: edits far from upstream's in a.c and big.txt, so both merge three ways (a.c at its
    // new name).
    let vendor = commit(
        repo,
        Some(base),
        1_600_000_050,
        "vendor: local edits",
        &[
            Edit::File(
                "src/a.c",
                replace_line(&a_c, 250, "vendor edit at 250"),
                FileMode::Blob,
            ),
            Edit::File(
                "data/big.txt",
                replace_line(&big_text, 100, "vendor edit at 100"),
                FileMode::Blob,
            ),
        ],
    );
    repo.reference("refs/heads/master", base, true, "test")
        .unwrap();
    repo.reference("refs/heads/vendor", vendor, true, "test")
        .unwrap();
    t.checkout("vendor");

    let g = t.copy();
    git_ok(g.path(), &["cherry-pick", "-x", "master..upstream"]);
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::run(t.path(), &["apply", "-x", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(
        out.stderr.ends_with("Done: picked 8, skipped 0.\n"),
        "{}",
        out.stderr
    );

    let fmt = "--format=%H %T %an <%ae> %ad | %cn <%ce> %cd%n%B";
    let ours = git_ok(t.path(), &["log", fmt, "master..HEAD"]);
    assert_eq!(ours, git_ok(g.path(), &["log", fmt, "master..HEAD"]));
    assert!(ours.contains("(cherry picked from commit "), "{ours}");
    // Spot checks that the series did what it says, so equality above is not equality of two no-ops.
    let tree = git_ok(t.path(), &["ls-tree", "-r", "HEAD"]);
    assert!(tree.contains("160000 commit 2222222222222222222222222222222222222222\tvendor/lib"));
    assert!(tree.contains("100755 blob "), "{tree}");
    assert!(tree.contains("\tnew/name.c") && !tree.contains("\told/name.c"));
    let b_c = t.read("src/b.c");
    assert!(b_c.contains("upstream edit at 10\n") && b_c.contains("vendor edit at 250\n"));
    let big = t.read("data/big.txt");
    assert!(big.contains("vendor edit at 100\n") && big.contains("upstream edit at 19000\n"));
    assert!(big.contains("upstream edit at 19500\n"));
    assert_eq!(
        git_ok(t.path(), &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
    assert_eq!(t.snapshot().files, g.snapshot().files);
    // Every object is in the pack bport wrote, readable by git and valid.
    git_ok(t.path(), &["fsck", "--full", "--strict", "--no-dangling"]);
    let packs: Vec<String> = std::fs::read_dir(t.path().join(".git/objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".pack"))
        .collect();
    assert_eq!(packs.len(), 1, "{packs:?}");
    let verified = git_ok(t.path(), &["verify-pack", "-v", &packs[0]]);
    assert!(
        verified.contains("chain length") || verified.contains("non delta"),
        "{verified}"
    );
}

/// A stop right after a pick that merged three ways: the merged blob (hashed and held by bport, not libgit2, until
/// the pack) is the stop's stage 2 and the file under the markers, so it must be in the pack written at the stop.
/// The stages and the file equal what `git cherry-pick` leaves, and `--abort` restores the branch.
#[test]
fn a_stop_after_a_merge_has_gits_stages_and_the_merged_blob_on_disk() {
    skip_unless!(has_git());
    let t = TestRepo::new();
    let repo = &t.repo;
    let f = text(200, "f");
    let base = commit(
        repo,
        None,
        1_600_000_000,
        "base",
        &[Edit::File("f.txt", f.clone(), FileMode::Blob)],
    );
    let up1 = commit(
        repo,
        Some(base),
        1_600_000_100,
        "f: edit line 150",
        &[Edit::File(
            "f.txt",
            replace_line(&f, 150, "upstream edit at 150"),
            FileMode::Blob,
        )],
    );
    let up2 = commit(
        repo,
        Some(up1),
        1_600_000_200,
        "f: edit line 20",
        &[Edit::File(
            "f.txt",
            replace_line(
                &replace_line(&f, 150, "upstream edit at 150"),
                20,
                "upstream edit at 20",
            ),
            FileMode::Blob,
        )],
    );
    let vendor = commit(
        repo,
        Some(base),
        1_600_000_050,
        "vendor: edit line 20",
        &[Edit::File(
            "f.txt",
            replace_line(&f, 20, "vendor edit at 20"),
            FileMode::Blob,
        )],
    );
    repo.reference("refs/heads/upstream", up2, true, "test")
        .unwrap();
    repo.reference("refs/heads/master", base, true, "test")
        .unwrap();
    repo.reference("refs/heads/vendor", vendor, true, "test")
        .unwrap();
    t.checkout("vendor");

    let g = t.copy();
    let git_stop = crate::support::oracle::git(g.path())
        .args(["cherry-pick", "master..upstream"])
        .output()
        .expect("spawn git");
    assert!(
        !git_stop.status.success(),
        "git must stop at the second pick"
    );
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());

    let stages = git_ok(t.path(), &["ls-files", "-s"]);
    assert_eq!(stages, git_ok(g.path(), &["ls-files", "-s"]));
    assert_eq!(stages.lines().count(), 3, "{stages}");
    let ours = git_ok(t.path(), &["cat-file", "-p", ":2:f.txt"]);
    assert!(ours.contains("upstream edit at 150\n") && ours.contains("vendor edit at 20\n"));
    assert_eq!(t.read("f.txt"), g.read("f.txt"));
    assert!(t.read("f.txt").contains("<<<<<<< HEAD\n"));
    git_ok(t.path(), &["fsck", "--full", "--strict", "--no-dangling"]);

    let abort = bport::run(t.path(), &["apply", "--abort"]);
    assert_eq!(abort.code, Some(0), "{}", abort.transcript());
    assert_eq!(t.oid("HEAD"), vendor);
    assert_eq!(
        t.read("f.txt"),
        String::from_utf8(replace_line(&f, 20, "vendor edit at 20")).unwrap()
    );
}

/// A commit that replaces a file by a directory of the same name picks as git picks it: libgit2's tree updater,
/// which bport's own tree builder replaces, refuses it ("D/F conflict when updating tree").
#[test]
fn a_file_replaced_by_a_directory_picks_as_git_does() {
    skip_unless!(has_git());
    let t = TestRepo::new();
    t.commit(
        "base",
        &[
            ("f", Some("a file\n")),
            ("f.c", Some("c\n")),
            ("keep", Some("k\n")),
        ],
    );
    t.branch("upstream", "HEAD");
    t.checkout("upstream");
    t.commit(
        "f becomes a directory",
        &[("f", None), ("f/g", Some("g\n"))],
    );
    t.commit("f/g edited", &[("f/g", Some("g2\n"))]);
    t.checkout("master");
    // The branch drifted elsewhere, so the picks are real merges onto another tree.
    t.commit("vendor", &[("keep", Some("k2\n"))]);

    let g = t.copy();
    git_ok(g.path(), &["cherry-pick", "-x", "master..upstream"]);
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::run(t.path(), &["apply", "-x", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let fmt = "--format=%H %T %an <%ae> %ad | %cn <%ce> %cd%n%B";
    let ours = git_ok(t.path(), &["log", fmt, "master..HEAD"]);
    assert_eq!(ours, git_ok(g.path(), &["log", fmt, "master..HEAD"]));
    assert_eq!(
        git_ok(t.path(), &["ls-tree", "-r", "--name-only", "HEAD"]),
        "f.c\nf/g\nkeep\n"
    );
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "");
    assert_eq!(t.snapshot().files, g.snapshot().files);
}
