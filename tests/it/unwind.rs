//! DWARF unwinding through glibc's signal trampoline (`__restore_rt`), against Linux perf's `perf script` on a
//! recording of a small C program whose SIGALRM handler spins: every chain that passes through the handler must
//! be the one perf prints, and must reach `main` through the interrupted code.
//!
//! The lazy-binding resolver (`_dl_runtime_resolve_xsavec`, CFA in RBX) is covered by a unit test on the real
//! ld.so in `perf::unwind::dwarf`, as samples landing in it cannot be forced.

use crate::support::bport;
use crate::support::oracle::{self, perf_ok};
use std::process::Command;

const PROGRAM: &str = r#"
#include <signal.h>
#include <string.h>
#include <sys/time.h>
volatile unsigned long sink;
volatile int handled;
__attribute__((noinline)) void spin(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void handler(int sig) { (void)sig; spin(2000000); handled++; }
__attribute__((noinline)) void work(void) { while (handled < 60) spin(1000); }
int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGALRM, &sa, 0);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_REAL, &it, 0);
    work();
    return 0;
}
"#;

/// The sample blocks whose chain passes through `handler`.
fn handler_blocks(text: &str) -> Vec<&str> {
    text.split("\n\n")
        .filter(|b| b.contains(" handler+"))
        .collect()
}

#[test]
fn dwarf_chains_through_a_signal_handler_equal_perf_script() {
    if !oracle::has_perf() || !oracle::require("gcc", "apt-get install gcc libc6-dev") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("sig.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = dir.path().join("sig");
    let out = Command::new("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    oracle::assert_success(&out, "gcc sig.c");
    let data = dir.path().join("perf.data");
    perf_ok(
        dir.path(),
        &[
            "record",
            "-q",
            "-o",
            data.to_str().unwrap(),
            "-F",
            "2999",
            "--call-graph",
            "dwarf",
            "--",
            exe.to_str().unwrap(),
        ],
    );
    let perf = perf_ok(dir.path(), &["script", "-i", data.to_str().unwrap()]);
    let ours = bport::run(dir.path(), &["script", "-i", data.to_str().unwrap()]);
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);

    let (theirs, mine) = (handler_blocks(&perf), handler_blocks(&ours.stdout));
    // 60 handler runs of about a millisecond each: dozens of samples; a handful would prove little.
    assert!(mine.len() >= 10, "only {} handler samples", mine.len());
    assert_eq!(mine.len(), theirs.len());
    for (p, b) in theirs.iter().zip(&mine) {
        assert_eq!(b, p, "bport script (left) differs from perf script (right)");
        // Past the trampoline: the interrupted code, `work` and `main` (the walk did not stop at
        // __restore_rt).
        let main = b
            .find(" main+")
            .unwrap_or_else(|| panic!("chain stops early:\n{b}"));
        assert!(b[..main].contains(" work+"), "no work frame:\n{b}");
    }
}
