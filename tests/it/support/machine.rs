//! One test at a time per piece of machine-wide state (the uprobe_events file, the lock tracepoints and their
//! BPF programs), across every test process on the machine: two `cargo test` runs at once (two checkouts, a
//! developer beside CI) would otherwise see each other's probes and contention and fail for the wrong reason.

use std::fs::File;
use std::os::fd::AsRawFd;

/// Holds the machine-wide lock named `name` until dropped.
pub struct MachineLock {
    _file: File,
}

/// Waits for the machine-wide lock `name` (an exclusive `flock` on `/tmp/bport-it-NAME.lock`). Each call
/// opens the file anew, and `flock` locks conflict between open files, so threads of one process wait for each
/// other as processes do.
pub fn lock(name: &str) -> MachineLock {
    let path = std::env::temp_dir().join(format!("bport-it-{name}.lock"));
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    loop {
        // SAFETY: `file` is open for the whole call; flock only reads the descriptor.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if r == 0 {
            return MachineLock { _file: file };
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::Interrupted,
            "flock {}: {e}",
            path.display()
        );
    }
}
