//! What a first day with the CLI runs into: a closed stdout, the current directory, machine-readable output, a
//! mistaken option or input file, libgit2's internals in messages, a failed recording, SVG on a terminal, and stdin.

use crate::support::bport::{self, CommandOutput};
use crate::support::scenario;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/perf")
        .join(name)
}

/// Runs `cmd` with its stdout a pipe whose reading end is already closed: every write to it fails with EPIPE,
/// deterministically (the reader is gone before the process starts).
fn with_closed_stdout(mut cmd: Command) -> CommandOutput {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = cmd
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("spawn bport");
    CommandOutput {
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

#[test]
fn a_closed_stdout_ends_the_output_quietly_for_every_command() {
    let t = scenario::foo_bar().repo();
    let (_list_dir, list) = scenario::list_file(&t.list("master..bar"));
    let list = list.to_str().unwrap();
    let fp = fixture("fp.data");
    let fp = fp.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["--help"],
        &["--version"],
        &["apply", "--help"],
        &["completions", "zsh"],
        &["completions", "bash"],
        &["completions", "fish"],
        &["man"],
        &["list", "master..bar"],
        &["status"],
        &["status", "--format", "json"],
        &["apply", "--dry-run", list],
        &["apply", "--dry-run", "--format", "json", list],
        &["script", "-i", fp],
        &["report", "-i", fp, "--stdio"],
        &["buildid-list", "-i", fp],
        &["dump", "-i", fp],
        &["flamegraph", "-i", fp],
        &["flamegraph", "-i", fp, "--folded"],
        &["probe", "--help"],
    ];
    for args in commands {
        let mut cmd = bport::bport(t.path());
        cmd.args(*args);
        let out = with_closed_stdout(cmd);
        assert!(
            out.code == Some(0) && !out.stderr.contains("panicked"),
            "bport {}: {}",
            args.join(" "),
            out.transcript()
        );
    }
    // The run's own state is untouched by the dry runs whose output went nowhere.
    assert_eq!(
        bport::run(t.path(), &["status"]).stdout,
        "No bport apply in progress.\n"
    );
}

/// A closed stdout ends verify's report, not its verdict: a failing check still exits 3 (script's DWARF mode
/// selection switched off makes the dwarf cells fail), a passing one 0.
#[test]
fn verify_with_a_closed_stdout_still_exits_with_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    for (broken, code) in [(false, 0), (true, 3)] {
        let mut cmd = bport::bport(dir.path());
        cmd.args(["verify", "--kernel", "4.1", "--duration-ms", "100"]);
        if broken {
            cmd.env("BPORT_TEST_SCRIPT_NO_DWARF_MODE", "1");
        }
        let out = with_closed_stdout(cmd);
        assert_eq!(out.code, Some(code), "{}", out.transcript());
        assert!(!out.stderr.contains("panicked"), "{}", out.transcript());
    }
}

/// `verify` reads its targets table from the binary: the same report from a directory without `patchlists/` as
/// from the checkout, naming the built-in target and its line as the README shows.
#[test]
fn verify_names_the_built_in_target_from_any_directory() {
    let elsewhere = tempfile::tempdir().unwrap();
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let args = [
        "verify",
        "--kernel",
        "4.1",
        "--duration-ms",
        "100",
        "--format",
        "json",
    ];
    let targets: Vec<Value> = [elsewhere.path(), checkout]
        .into_iter()
        .map(|dir| {
            let out = bport::run(dir, &args);
            let report: Value = serde_json::from_str(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", out.transcript()));
            report["target"].clone()
        })
        .collect();
    let built_in = serde_json::json!({"file": "<built-in>/patchlists/targets.yaml", "line": 13});
    assert_eq!(targets, [built_in.clone(), built_in]);
    let out = bport::run(elsewhere.path(), &args[..5]);
    assert_eq!(
        out.stdout.lines().next().unwrap_or_default(),
        "verify kernel 4.1 (target <built-in>/patchlists/targets.yaml:13)",
        "{}",
        out.transcript()
    );
}

/// `--targets FILE` replaces the built-in table: its mistakes are reported with its name and line.
#[test]
fn verify_targets_overrides_the_built_in_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.yaml"),
        "targets:\n  - kernel: \"4.1\"\n    branhc: vendor\n",
    )
    .unwrap();
    let out = bport::run(
        dir.path(),
        &["verify", "--kernel", "4.1", "--targets", "mine.yaml"],
    );
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr.starts_with("error: mine.yaml:") && out.stderr.contains("branhc"),
        "{}",
        out.transcript()
    );
}

/// A stopped run as JSON, with the documented schema version; no run is `in_progress: false`.
#[test]
fn status_and_dry_run_have_a_versioned_json_form() {
    let (t, _dir, list) = scenario::foo_bar().with_list();
    let list = list.to_str().unwrap();
    let none: Value =
        serde_json::from_str(&bport::run(t.path(), &["status", "--format", "json"]).stdout)
            .unwrap();
    assert_eq!(none, serde_json::json!({"schema": 1, "in_progress": false}));

    let plan = bport::run(t.path(), &["apply", "--dry-run", "--format", "json", list]);
    assert_eq!(
        (plan.code, plan.stderr.as_str()),
        (Some(0), ""),
        "{}",
        plan.transcript()
    );
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(plan["schema"], 1);
    assert_eq!(plan["dry_run"], true);
    let bar = t.oid("bar~1").to_string();
    assert_eq!(
        plan["steps"][0],
        serde_json::json!({"index": 1, "line": 1, "commit": bar, "subject": "bar description",
            "outcome": "conflict", "paths": ["README"]})
    );
    assert_eq!(plan["steps"][1]["outcome"], "picked");
    assert!(
        plan["steps"][1].get("new").is_none(),
        "a dry run names no commit"
    );
    assert_eq!(
        plan["summary"],
        serde_json::json!({"pick": 2, "conflicts": 1, "skip": 0, "skip_by_rule": {}})
    );

    let stop = bport::run(t.path(), &["apply", list]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    let st: Value =
        serde_json::from_str(&bport::run(t.path(), &["status", "--format", "json"]).stdout)
            .unwrap();
    assert_eq!(st["schema"], 1);
    assert_eq!(st["in_progress"], true);
    assert_eq!(st["phase"], "stopped");
    assert_eq!(
        (st["position"].clone(), st["total"].clone()),
        (1.into(), 2.into())
    );
    assert_eq!(st["conflicts"], serde_json::json!(["README"]));
    assert_eq!(st["branch"], "refs/heads/foo");
    assert_eq!(st["steps"][0]["outcome"], "conflict");
    assert_eq!(st["steps"][1]["outcome"], "pending");
    // `--format json` is the plan's format: without --dry-run it is refused, not ignored.
    let refused = bport::run(t.path(), &["apply", "--format", "json", list]);
    assert_eq!(refused.code, Some(2), "{}", refused.transcript());
}

/// `--onto` is git's rebase option, not bport's: the error says how bport does it, not "did you mean --continue".
#[test]
fn apply_onto_says_how_to_pick_onto_another_branch() {
    let (t, _dir, list) = scenario::foo_bar().with_list();
    let before = t.snapshot();
    let out = bport::run(
        t.path(),
        &["apply", "--onto", "master", list.to_str().unwrap()],
    );
    assert_eq!(
        out.transcript(),
        format!(
            "------- stderr -------\nerror: bport apply picks onto the branch that is checked out; it has no --onto\n\
             hint: git switch master && bport apply {}\n[exit status: 2]\n",
            list.display()
        )
    );
    assert_eq!(t.snapshot(), before);
}

/// A `git format-patch` file or an mbox is read as mail (tests/it/mail.rs); one without a patch is named as such,
/// whichever form it has, and nothing is touched.
#[test]
fn a_mail_file_without_a_patch_is_named() {
    let t = scenario::foo_bar().repo();
    let before = t.snapshot();
    let sha = t.oid("bar").to_string();
    let cases = [
        (
            format!(
                "From {sha} Mon Sep 17 00:00:00 2001\nFrom: A U Thor <a@example.com>\nDate: Thu, 1 Jan 2026 00:00:00 +0000\n\
                 Subject: [PATCH] more bar description\n\n---\n README | 1 +\n"
            ),
            "more bar description",
        ),
        (
            "From someone@example.com Thu Jan  1 00:00:00 2026\nFrom: someone@example.com\nSubject: Re: a fix\n\nbody\n"
                .to_owned(),
            "a fix",
        ),
    ];
    for (text, subject) in cases {
        let (_dir, path) = scenario::list_file(&text);
        let out = bport::run(t.path(), &["apply", path.to_str().unwrap()]);
        assert_eq!(
            out.transcript(),
            format!(
                "------- stderr -------\nerror: mail 1 ({subject:?}): no patch (`diff --git`) in the mail\n\
                 hint: fix or drop that mail (git am would stop there too); nothing was applied\n[exit status: 2]\n",
            )
        );
    }
    assert_eq!(t.snapshot(), before);
}

/// libgit2's error classes and codes are its internals: messages say what happened in words.
#[test]
fn libgit2_internals_stay_out_of_error_messages() {
    let outside = tempfile::tempdir().unwrap();
    let t = scenario::foo_bar().repo();
    for (dir, args) in [
        (outside.path(), &["status"][..]),
        (outside.path(), &["list", "a..b"][..]),
        (t.path(), &["list", "nope..bar"][..]),
        (t.path(), &["rerere", "train", "nope..bar"][..]),
    ] {
        let out = bport::run(dir, args);
        assert_ne!(out.code, Some(0), "{}", out.transcript());
        assert!(
            !out.stderr.contains("class=") && !out.stderr.contains("code="),
            "bport {}: {}",
            args.join(" "),
            out.transcript()
        );
    }
    assert_eq!(
        bport::run(outside.path(), &["status"]).transcript(),
        format!(
            "------- stderr -------\nerror: no git repository at or above {0}\n  caused by: could not find repository at '{0}'\n\
             hint: run bport inside a git repository\n[exit status: 4]\n",
            outside.path().display()
        )
    );
}

/// A recording that fails leaves no perf.data, and an earlier one stays exactly as it was (not moved to .old).
#[test]
fn a_failed_record_leaves_no_file_and_keeps_the_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = bport::run(dir.path(), &["record", "--", "/nonexistent"]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != ".xdg")
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(dir.path()),
        Vec::<String>::new(),
        "{}",
        out.transcript()
    );
    let earlier = std::fs::read(fixture("fp.data")).unwrap();
    std::fs::write(dir.path().join("perf.data"), &earlier).unwrap();
    let out = bport::run(dir.path(), &["record", "--", "/nonexistent"]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert_eq!(names(dir.path()), ["perf.data"]);
    assert!(std::fs::read(dir.path().join("perf.data")).unwrap() == earlier);
}

/// `flamegraph` without `-o` on a terminal refuses, with the option that writes a file; a pipe gets the SVG.
#[test]
fn flamegraph_refuses_to_draw_svg_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let fp = fixture("fp.data");
    let (master, slave) = open_pty();
    // Drain the terminal so that a wrong write would not block the child.
    let drain = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut master = master;
        let _ = std::io::Read::read_to_end(&mut master, &mut seen);
        seen
    });
    let out = bport::bport(dir.path())
        .args(["flamegraph", "-i", fp.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(slave)
        .stderr(Stdio::piped())
        .output()
        .expect("spawn bport");
    let on_terminal = drain.join().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: not writing an SVG to a terminal\n\
         hint: write it to a file with -o flame.svg, or pipe it (bport flamegraph > flame.svg)\n\
         hint: --folded prints the folded stacks as text\n"
    );
    assert!(
        on_terminal.is_empty(),
        "{}",
        String::from_utf8_lossy(&on_terminal)
    );
    let piped = bport::run(dir.path(), &["flamegraph", "-i", fp.to_str().unwrap()]);
    assert_eq!(piped.code, Some(0), "{}", piped.stderr);
    assert!(
        piped.stdout.starts_with("<?xml"),
        "{}",
        &piped.stdout[..100.min(piped.stdout.len())]
    );
}

/// One rule for stdin: `-` names it, and without an input a pipe on stdin is read (`apply` as `script`); a
/// terminal or nothing on stdin is never waited on.
#[test]
fn apply_and_script_read_a_pipe_on_stdin_without_dash() {
    let (t, _dir, list) = scenario::foo_bar().with_list();
    let text = std::fs::read(&list).unwrap();
    let piped = |args: &[&str], input: &[u8]| {
        let mut child = bport::bport(t.path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, input).unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    let from_file = bport::run(t.path(), &["apply", "--dry-run", list.to_str().unwrap()]);
    for args in [
        &["apply", "--dry-run"][..],
        &["apply", "--dry-run", "-"][..],
    ] {
        let out = piped(args, &text);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            from_file.stdout,
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // No list and nothing piped: a usage error that says both ways, not a wait on the terminal.
    let out = bport::bport(t.path())
        .args(["apply"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .starts_with("error: no patch list given\nhint: bport apply FILE, or pipe one in"));

    let data = std::fs::read(fixture("fp.data")).unwrap();
    let script_file = bport::run(
        t.path(),
        &["script", "-i", fixture("fp.data").to_str().unwrap()],
    );
    let script_pipe = piped(&["script"], &data);
    assert_eq!(
        String::from_utf8_lossy(&script_pipe.stdout),
        script_file.stdout
    );
    // `dump` follows the same rule.
    let dump_pipe = piped(&["dump", "--header-only"], &data);
    assert_eq!(
        dump_pipe.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&dump_pipe.stderr)
    );
    let dump_file = bport::run(
        t.path(),
        &[
            "dump",
            "--header-only",
            "-i",
            fixture("fp.data").to_str().unwrap(),
        ],
    );
    assert!(
        dump_file.stdout.lines().count() > 2,
        "{}",
        dump_file.transcript()
    );
    assert_eq!(String::from_utf8_lossy(&dump_pipe.stdout), dump_file.stdout);
}

/// A pseudo-terminal: (master, slave). The slave is what a program sees as its terminal.
fn open_pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: out-pointers to live locals; null name, termios and window size mean defaults.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two fresh descriptors that nothing else owns.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    }
}
