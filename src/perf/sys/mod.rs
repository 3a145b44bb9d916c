//! The system calls the profiler makes, under every part that needs them: `perf_event_open` and its ioctls
//! ([`event`]), the ring-buffer mapping ([`ring`]), the workload's fork/exec, wait and kill ([`process`]), the
//! signals that end a run ([`signal`]), a pipe's size, mounting tracefs and the CPU list ([`fs`]). `record`,
//! `trace`, `probe` and `lock` use them; this layer names nothing of `perf` but `abi` (in a test).
//!
//! A home of `unsafe` (ARCHITECTURE.md, with `perf/bpf/sys.rs` for `bpf()` and `perf/data/map.rs` for the file
//! map): every block says why it is sound, and what is exported is safe: an [`EventFd`] owns its descriptor, a
//! [`RingMap`] its mapping, a [`PausedChild`] its child until it is started or reaped.

pub(crate) mod event;
pub(crate) mod fs;
pub(crate) mod process;
pub(crate) mod ring;
pub(crate) mod signal;

use std::io;

pub use event::{perf_event_open, poll, AttrBuf, EventFd};
pub use fs::{mount_tracefs, online_cpus, parse_cpu_list, set_pipe_size};
#[cfg(test)]
pub use process::{current_cpu, gettid, pin_thread_to};
pub use process::{kill, try_wait, wait, ChildExit, Command, CommandError, PausedChild};
pub use ring::{page_size, RingMap};
pub use signal::stop_flag;

/// A libc return code as a result: negative is the thread's errno.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
