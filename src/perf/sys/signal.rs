//! The signals that end a run with its output (SIGINT, SIGTERM), caught into one flag.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use super::check;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The signals that end a run with its output, as perf handles them: `perf record` and `perf lock contention`
/// catch SIGINT and SIGTERM (and SIGCHLD, which the callers see through `waitpid`), so `timeout` and service
/// managers get the file or the report, while other signals keep their default action.
pub const STOP_SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Installs, for each of [`STOP_SIGNALS`], a handler that only sets a flag (no SA_RESTART, so a blocked `poll`
/// returns) and returns the flag. Ctrl-C or SIGTERM then ends a recording cleanly: the loop sees the flag, drains
/// the buffers and writes the file.
pub fn stop_flag() -> io::Result<&'static AtomicBool> {
    for signal in STOP_SIGNALS {
        // SAFETY: zeroed sigaction is a valid "no flags, empty mask" value; the handler is an extern "C" fn that
        // only performs an atomic store (async-signal-safe); sigaction copies the struct.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            check(libc::sigaction(signal, &action, std::ptr::null_mut()))?;
        }
    }
    Ok(&INTERRUPTED)
}
