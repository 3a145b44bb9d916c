//! The only place that runs external tools (`git`, `perf`, qemu …) as oracles.
//!
//! Every spawned command gets a hermetic environment set on the `Command` (never on the test process): no user or
//! system git config, a fixed identity and clock. A missing tool is a loud skip locally and a failure under CI.

use std::path::Path;
use std::process::{Command, Output};

/// Whether `tool` can be run; when it cannot, prints a loud SKIPPED line, or panics under `CI=true`
/// (CI must run every test; a skip there would hide a missing install step in `.ci/run`).
pub fn require(tool: &str, install_hint: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    super::require::require(found, &format!("{tool} not found"), install_hint)
}

/// How to install Linux perf, the profiler's oracle (Debian's package; `.ci/run` installs it).
pub const PERF_HINT: &str = "apt-get install linux-perf";

/// [`require`] for Linux perf.
pub fn has_perf() -> bool {
    require("perf", PERF_HINT)
}

/// [`require`] for git.
pub fn has_git() -> bool {
    require("git", "apt-get install git")
}

/// A `git` command in `dir` with a hermetic environment: no global/system config, fixed identity and dates.
pub fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".xdg"))
        .env("GIT_AUTHOR_NAME", "Oracle Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "1700000000 +0000")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "1700000000 +0000")
        .env("LC_ALL", "C");
    cmd
}

/// Runs `git args…` in `dir` and returns its stdout; panics with git's stderr when it fails.
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = git(dir).args(args).output().expect("spawn git");
    assert_success(&out, &format!("git {}", args.join(" ")));
    String::from_utf8(out.stdout).expect("git output is UTF-8")
}

/// Panics with the command's stderr unless it succeeded.
pub fn assert_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `perf` command (Linux perf, the profiler's oracle) run in `home` with `HOME` set to it, so its build-id cache
/// (`~/.debug`) and `~/.perfconfig` are the test's own, and no pager: the one environment every test gives perf.
pub fn perf(home: &Path) -> Command {
    let mut cmd = Command::new("perf");
    cmd.current_dir(home)
        .env("HOME", home)
        .env("LC_ALL", "C")
        .env("PAGER", "cat")
        .env("PERF_PAGER", "cat")
        .env_remove("PERF_EXEC_PATH");
    cmd
}

/// Runs `perf args…` with `HOME=home` and returns its stdout; panics with perf's stderr when it fails.
pub fn perf_ok(home: &Path, args: &[&str]) -> String {
    let out = perf(home).args(args).output().expect("spawn perf");
    assert_success(&out, &format!("perf {}", args.join(" ")));
    String::from_utf8(out.stdout).expect("perf output is UTF-8")
}

/// Runs `tool args…` (an oracle other than git and perf: g++, rustc, c++filt, nm) with `stdin` as its input,
/// and returns its stdout; panics with the tool's stderr when it fails.
pub fn tool_ok(tool: &str, args: &[&str], env: &[(&str, &str)], stdin: &str) -> String {
    use std::io::Write;
    let mut cmd = Command::new(tool);
    cmd.args(args)
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {tool}: {e}"));
    let mut input = child.stdin.take().expect("piped stdin");
    let text = stdin.to_owned();
    let writer = std::thread::spawn(move || input.write_all(text.as_bytes()));
    let out = child.wait_with_output().expect("wait for the tool");
    writer.join().expect("stdin writer").expect("write stdin");
    assert_success(&out, &format!("{tool} {}", args.join(" ")));
    String::from_utf8(out.stdout).expect("tool output is UTF-8")
}
