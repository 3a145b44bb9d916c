//! The one rule for a test whose precondition is missing (a tool, root, a kernel feature, a system file): a loud
//! SKIPPED line locally, a failure under `CI=true` or `CI=1` (CI must run every test; a skip there would hide a
//! missing install step in `.ci/run`). The integration tests reach it through `support` (and
//! `oracle::require` for tools); the library's unit tests include this same file (`src/lib.rs`, under
//! `#[cfg(test)]`), so the rule is written once.

/// Whether this run is CI's.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `present`; when it is false, a loud `SKIPPED (missing; how)` line and `false`, or a panic under CI.
pub fn require(present: bool, missing: &str, how: &str) -> bool {
    if present {
        return true;
    }
    if in_ci() {
        panic!("required under CI: {missing} ({how}); fix .ci/run or the CI machine");
    }
    eprintln!("SKIPPED ({missing}; {how})");
    false
}

/// Whether this process runs as root (effective uid 0), read from `/proc/self/status` (no `unsafe` geteuid).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    })
}

/// [`require`] of root, for tests of `bpf()`, tracefs and perf events that only root may use.
pub fn require_root(what: &str) -> bool {
    require(
        is_root(),
        &format!("{what} needs root"),
        "run the tests as root, as CI does",
    )
}
