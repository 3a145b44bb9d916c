//! Deterministic fault injection for the crash tests, compiled into debug builds only (release builds read no
//! variable and do nothing here).
//!
//! Every write step of a run that a crash could interrupt calls [`point`]. The points are counted in the order
//! they are reached, so a test can kill the process at the Nth one (`BPORT_TEST_FAULT_KILL=N`), run a command at
//! the Nth one as a concurrent user would (`BPORT_TEST_FAULT_RUN=N:<sh command>`, waited for), and learn how many
//! points a command reaches (`BPORT_TEST_FAULT_TRACE=<file>`, one name a line). No timing is involved.

/// A step a crash may interrupt.
pub fn point(name: &str) {
    #[cfg(debug_assertions)]
    imp::point(name);
    #[cfg(not(debug_assertions))]
    let _ = name;
}

#[cfg(debug_assertions)]
mod imp {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static HITS: AtomicUsize = AtomicUsize::new(0);

    pub fn point(name: &str) {
        let n = HITS.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(file) = std::env::var_os("BPORT_TEST_FAULT_TRACE") {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
            {
                let _ = writeln!(f, "{n} {name}");
            }
        }
        if let Ok(run) = std::env::var("BPORT_TEST_FAULT_RUN") {
            if let Some((at, command)) = run.split_once(':') {
                if at.parse() == Ok(n) {
                    let _ = std::process::Command::new("sh")
                        .args(["-c", command])
                        .status();
                }
            }
        }
        if std::env::var("BPORT_TEST_FAULT_KILL")
            .ok()
            .and_then(|v| v.parse().ok())
            == Some(n)
        {
            // As a SIGKILL would: no destructor runs, no lock or temp file is cleaned up.
            std::process::abort();
        }
    }
}
