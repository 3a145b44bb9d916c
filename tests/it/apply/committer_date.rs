//! `GIT_COMMITTER_DATE` in the forms git reads gives the commits `git cherry-pick` makes; a value git cannot read
//! stops the run before it changes anything.

use super::*;
use crate::support::oracle::{git, git_ok};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// A zone with daylight saving time as a POSIX rule (no tz database needed), so that the forms without a zone,
/// which git reads in the local zone, give an offset that is neither UTC nor the same all year.
const TZ: &str = "EST5EDT,M3.2.0,M11.1.0";

/// For each form, `bport apply` of two commits and `git cherry-pick` of the same two from the same start end on
/// the same commit: same committer date and zone, so the same ids.
#[test]
fn every_date_form_gives_the_commits_git_cherry_pick_makes() {
    skip_unless!(has_git());
    for value in [
        "1767225600 +0130",
        "@1767225600 -0800",
        "@5 +0000",
        "1767225600",
        "@1767225600",
        "2026-01-01T10:00:00Z",
        "2026-01-01 10:00:00Z",
        "2026-01-01T10:00:00+05:30",
        "2026-01-01 10:00:00 -0800",
        "2026-01-01T10:00:00+0200",
        "2026-01-01T10:00:00-05",
        "2026-01-01T10:00:00.250+02:00",
        "2026-01-01T10:00:00",
        "2026-07-01 10:00:00",
        "2026-01-01 10:00",
        "20260101T100000",
        "2026.01.01 10:00:00 +0100",
        "Thu, 01 Jan 2026 10:00:00 +0200",
        "Thu, 1 Jan 2026 10:00:00 GMT",
        "Thu, 01 Jan 2026 10:00:00",
        "Thu Jan 1 10:00:00 2026 +0100",
        "Thu Jan 01 2026 10:00:00 +0100",
        "Thu Jan 1 10:00:00 2026",
        "2026-01-01 10:00:00 UTC",
        "Sun Nov 29 11:12:27 UTC 2026",
    ] {
        let t = four_fixes();
        let g = t.copy();
        let (_d, list) = list_file(&t.list("upstream~2..upstream"));
        for (tool, mut cmd, args) in [
            (
                "git cherry-pick",
                git(g.path()),
                ["cherry-pick", "upstream~2..upstream"],
            ),
            (
                "bport apply",
                bport::bport(t.path()),
                ["apply", list.to_str().unwrap()],
            ),
        ] {
            let out = cmd
                .args(args)
                .env("GIT_COMMITTER_DATE", value)
                .env("TZ", TZ)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{tool} with {value:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let fmt = "--format=%H %cI";
        assert_eq!(
            git_ok(t.path(), &["log", fmt, "vendor~2..vendor"]),
            git_ok(g.path(), &["log", fmt, "vendor~2..vendor"]),
            "GIT_COMMITTER_DATE={value:?}"
        );
    }
}

/// A value git dies on ("fatal: invalid date format", after merging the first pick into the index): bport exits
/// with the usage error, names the variable, and HEAD, index, worktree and refs are as they were, with no run
/// left to finish.
#[test]
fn an_unreadable_date_stops_before_anything_changes() {
    skip_unless!(has_git());
    let not_utf8 = OsStr::from_bytes(b"\xff");
    for value in [
        "garbage",
        "yesterday",
        "2026-01-01",
        "@-5 +0000",
        "2100-01-01T00:00:00Z",
    ]
    .map(OsStr::new)
    .into_iter()
    .chain([not_utf8])
    {
        let t = four_fixes();
        let g = t.copy();
        let out = git(g.path())
            .args(["cherry-pick", "upstream~2..upstream"])
            .env("GIT_COMMITTER_DATE", value)
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("invalid date format"),
            "git refuses {value:?} too: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        let before = t.snapshot();
        let (_d, list) = list_file(&t.list("upstream~2..upstream"));
        let out = bport::bport(t.path())
            .args(["apply", list.to_str().unwrap()])
            .env("GIT_COMMITTER_DATE", value)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value:?}: {stderr}");
        assert!(
            stderr.contains("GIT_COMMITTER_DATE") && stderr.contains(&*value.to_string_lossy()),
            "{stderr}"
        );
        assert_eq!(t.snapshot(), before, "{value:?}");
        assert!(!t.path().join(".git/bport/state.json").exists());
    }
}

/// Named deviation: a local time the clock skips (02:30 on the spring day) or repeats (01:30 on the autumn day)
/// is refused; git reads it as its C library's `mktime` decides, which differs between zones.
#[test]
fn a_local_time_the_clock_skips_or_repeats_is_refused() {
    for value in ["2026-03-08T02:30:00", "2026-11-01 01:30:00"] {
        let t = four_fixes();
        let before = t.snapshot();
        let (_d, list) = list_file(&t.list("upstream~2..upstream"));
        let out = bport::bport(t.path())
            .args(["apply", list.to_str().unwrap()])
            .env("GIT_COMMITTER_DATE", value)
            .env("TZ", TZ)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value:?}: {stderr}");
        assert!(stderr.contains("GIT_COMMITTER_DATE"), "{stderr}");
        assert_eq!(t.snapshot(), before, "{value:?}");
    }
}

/// `--continue` at a stop with a value git cannot read: refused with the usage error before the resolution is
/// recorded or committed; the stop stays as it was, and `--continue` with a readable date then records and commits
/// it.
#[test]
fn an_unreadable_date_refuses_continue_before_recording_anything() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    let resolved =
        crate::support::repo::README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nfoo\nbar\n");
    std::fs::write(t.path().join("README"), &resolved).unwrap();
    git_ok(t.path(), &["add", "README"]);
    let state = std::fs::read(t.path().join(".git/bport/state.json")).unwrap();
    let before = t.snapshot();

    let out = bport::bport(t.path())
        .args(["apply", "--continue"])
        .env("GIT_COMMITTER_DATE", "next tuesday")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("GIT_COMMITTER_DATE") && !stderr.contains("Recorded resolution"),
        "{stderr}"
    );
    assert_eq!(t.snapshot(), before);
    assert_eq!(
        std::fs::read(t.path().join(".git/bport/state.json")).unwrap(),
        state
    );

    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    assert!(
        cont.stderr
            .starts_with("Recorded resolution for 'README'.\n"),
        "{}",
        cont.stderr
    );
}
