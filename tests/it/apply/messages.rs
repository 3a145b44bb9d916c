//! Commit messages byte for byte as `git cherry-pick` writes them: hostile messages (CRLF, runs of blank lines,
//! trailing blanks, trailer blocks, comment-like lines, no final newline), with and without `-x` / `-s`, picked
//! clean and after a conflict resolved and continued. Same commit ids as git's.

use super::*;
use crate::support::oracle::git_ok;
use std::path::Path;

const MESSAGES: &[&str] = &[
    // A GitHub squash message: CRLF, blank runs, trailing blanks, a trailer block.
    "Squash: subject with trailing spaces   \r\n\r\nBody line one \r\n\r\n\r\n\r\n* item\r\n\r\nSigned-off-by: A <a@example.com>\r\nCo-authored-by: B <b@example.com>\r\n",
    "subject\n\n\n\nbody with trailing tab\t\n\n\n",
    "only a subject, no newline",
    "subject\n\n* bullet\n* bullet\n\nReviewed-by: X <x@example.com>\nLink: https://example.com/1\n",
    "subject\n\n# a line that starts like a comment\nbody\n",
    "subject\n\nbody\n---\nnotes: after a divider\n",
    "subject\n\nbody\n\nFixes: 0123456789ab (\"x\")\nnot a trailer line\n",
    "subject\n\nSigned-off-by: Test Committer <committer@example.com>\n",
    "  leading spaces in the subject\n\n\tindented body\t \n",
    "subject\n\nKey: value\n  continued value\nOther: v\n",
    "subject\n\nbody\n\nSigned-off-by: A <a@example.com>\nplain line\nanother plain line\n",
    "\n\nsubject after blank lines\n\nbody\n",
];

/// A repository whose `up` branch has one commit per message, each adding its own file, and (when `conflict`)
/// a first commit that edits the line `main` edits too.
fn repo_with_messages(dir: &Path, conflict: bool) {
    git_ok(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("shared.txt"), "one\ntwo\nthree\n").unwrap();
    git_ok(dir, &["add", "."]);
    git_ok(dir, &["commit", "-q", "-m", "base"]);
    git_ok(dir, &["checkout", "-q", "-b", "up"]);
    for (i, msg) in MESSAGES.iter().enumerate() {
        if conflict && i == 0 {
            std::fs::write(dir.join("shared.txt"), "one\nTWO upstream\nthree\n").unwrap();
        } else {
            std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
        }
        git_ok(dir, &["add", "."]);
        let file = dir.join(".git").join("MSG");
        std::fs::write(&file, msg).unwrap();
        git_ok(
            dir,
            &[
                "commit",
                "-q",
                "--allow-empty-message",
                "--cleanup=verbatim",
                "-F",
                file.to_str().unwrap(),
            ],
        );
    }
    git_ok(dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("shared.txt"), "one\nTWO vendor\nthree\n").unwrap();
    git_ok(dir, &["commit", "-q", "-am", "vendor edit"]);
}

fn copy_of(src: &Path) -> tempfile::TempDir {
    let dst = tempfile::tempdir().unwrap();
    git_ok(
        dst.path(),
        &["clone", "-q", "--no-hardlinks", src.to_str().unwrap(), "."],
    );
    git_ok(dst.path(), &["checkout", "-q", "main"]);
    git_ok(dst.path(), &["branch", "-q", "-f", "up", "origin/up"]);
    dst
}

/// The same resolution in both tools: take the picked side of `shared.txt`.
fn take_theirs(dir: &Path) {
    git_ok(dir, &["checkout", "--theirs", "--", "shared.txt"]);
    git_ok(dir, &["add", "shared.txt"]);
}

fn log(dir: &Path) -> String {
    git_ok(dir, &["log", "--format=%H%n%B%n--", "origin/main..main"])
}

#[test]
fn messages_equal_git_cherry_pick_byte_for_byte() {
    skip_unless!(has_git());
    for conflict in [false, true] {
        for flags in [&[][..], &["-x"][..], &["-s"][..], &["-x", "-s"][..]] {
            let origin = tempfile::tempdir().unwrap();
            repo_with_messages(origin.path(), conflict);
            let (g, b) = (copy_of(origin.path()), copy_of(origin.path()));

            let mut args = vec!["cherry-pick", "--allow-empty-message"];
            args.extend(flags);
            args.push("main..up");
            let out = oracle::git(g.path()).args(&args).output().unwrap();
            if conflict {
                assert_eq!(out.status.code(), Some(1), "git stops at the conflict");
                take_theirs(g.path());
                // No terminal: git commits with `--no-edit --cleanup=strip`.
                let out = oracle::git(g.path())
                    .args(["cherry-pick", "--continue"])
                    .stdin(std::process::Stdio::null())
                    .output()
                    .unwrap();
                oracle::assert_success(&out, "git cherry-pick --continue");
            } else {
                oracle::assert_success(&out, "git cherry-pick");
            }

            let list = git_ok(
                b.path(),
                &["log", "--reverse", "--format=%H %s", "main..up"],
            );
            let (_d, file) = list_file(&list);
            let mut args = vec!["apply"];
            args.extend(flags);
            args.push(file.to_str().unwrap());
            let out = bport::run(b.path(), &args);
            if conflict {
                assert_eq!(out.code, Some(1), "{}", out.transcript());
                take_theirs(b.path());
                let out = bport::run(b.path(), &["apply", "--continue"]);
                assert_eq!(out.code, Some(0), "{}", out.transcript());
            } else {
                assert_eq!(out.code, Some(0), "{}", out.transcript());
            }
            assert_eq!(
                log(b.path()),
                log(g.path()),
                "conflict: {conflict}, flags {flags:?}"
            );
        }
    }
}

/// `commit.cleanup` set in the config decides the clean-up of every pick, as in git.
#[test]
fn commit_cleanup_config_is_honoured_as_git_honours_it() {
    skip_unless!(has_git());
    for mode in ["verbatim", "whitespace", "strip", "scissors"] {
        for flags in [&[][..], &["-x"][..]] {
            let origin = tempfile::tempdir().unwrap();
            repo_with_messages(origin.path(), false);
            let (g, b) = (copy_of(origin.path()), copy_of(origin.path()));
            for d in [g.path(), b.path()] {
                git_ok(d, &["config", "commit.cleanup", mode]);
            }
            let mut args = vec!["cherry-pick", "--allow-empty-message"];
            args.extend(flags);
            args.push("main..up");
            git_ok(g.path(), &args);
            let list = git_ok(
                b.path(),
                &["log", "--reverse", "--format=%H %s", "main..up"],
            );
            let (_d, file) = list_file(&list);
            let mut args = vec!["apply"];
            args.extend(flags);
            args.push(file.to_str().unwrap());
            let out = bport::run(b.path(), &args);
            assert_eq!(out.code, Some(0), "{}", out.transcript());
            assert_eq!(
                log(b.path()),
                log(g.path()),
                "commit.cleanup={mode} {flags:?}"
            );
        }
    }
}
