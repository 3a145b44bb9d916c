//! `bport lock`: kernel lock contention from the `lock:contention_begin` / `lock:contention_end` tracepoints
//! (Linux 5.19+), live through BPF programs ([`live`]) and reported as `perf lock contention` prints it
//! ([`report`]).
//!
//! Design. Distro perf refuses `perf lock contention -b` without a BPF skeleton build, and a skeleton
//! build fails on kernels whose BTF lacks a symbol it relocates against (`runqueues`). bport emits its two small
//! programs at run time with its own assembler (`perf::bpf`), as RAW_TRACEPOINT programs that read the
//! tracepoint arguments (`lock`, `flags` / `ret`) from the context array: no clang, libbpf, BTF or vmlinux.h at
//! build or run time, so nothing a kernel lacks can block the tool. The program logic is perf's
//! (tools/perf/util/bpf_skel/lock_contention.bpf.c: per-task start timestamps, a per-CPU slot for spinning locks
//! so nested contention is handled, aggregation in a hash map keyed by stack id, task or lock address, filters in
//! small hash maps); see [`progs`]. Callers are named from `/proc/kallsyms` as perf names them: skip the BPF and
//! tracepoint frames, then the lock functions (`__lock_text_start..__lock_text_end` and
//! `__sched_text_start..__sched_text_end`), then print the first remaining frame as `sym+0xoff`.
//!
//! Per-object locks and owners ([`layout`]). perf's BPF mode names `-l` locks it can recognise (the waiter's
//! `mmap_lock` and `siglock`, CPUs' `rq_lock`) and with `-o` reads lock owners, all through struct offsets it
//! relocates with CO-RE. bport reads the same offsets from `/sys/kernel/btf/vmlinux` with the BTF reader of
//! `perf::probe` and assembles them into the programs (`bpf_probe_read_kernel` on `current`'s task_struct and on
//! the lock word); whatever a kernel's BTF or kallsyms lacks leaves only that lock unnamed or owner unknown.
//!
//! Owns: the programs, the live session, the aggregation and the report. Does not own tracefs or perf.data
//! (`perf::data`, `perf::record`), nor any rendering to a terminal (`cli::lock`). Imports nothing of
//! `backport`, `rerere` or `git`.

pub mod file;
pub mod kallsyms;
pub mod layout;
pub mod live;
pub mod progs;
pub mod report;

pub use live::{contention, LiveOptions, Target};
pub use progs::Aggr;
pub use report::{Contention, Report, ReportOptions, SortKey};

use crate::perf::abi::KernelVersion;

/// The contention tracepoints' entries in the ABI table.
fn tracepoints() -> impl Iterator<Item = &'static crate::perf::abi::AbiItem> {
    crate::perf::abi::table::TRACEPOINTS
        .iter()
        .filter(|i| i.name.starts_with("lock:contention_"))
}

/// The first kernel with the `lock:contention_begin/end` tracepoints (from the ABI table).
pub fn tracepoints_since() -> crate::perf::abi::Since {
    tracepoints()
        .map(|i| i.since)
        .max()
        .expect("the ABI table lists the contention tracepoints")
}

/// Whether kernel `version` has the contention tracepoints.
pub fn kernel_has_tracepoints(version: &KernelVersion) -> bool {
    tracepoints().all(|i| version.has(i.since))
}

/// Lock types by their `flags` in `contention_begin`, with perf's short (`type` column) and long names
/// (tools/perf/builtin-lock.c, `lock_type_table`).
pub const LOCK_TYPES: &[(u32, &str, &str)] = {
    use progs::{LCB_F_MUTEX as M, LCB_F_PERCPU as P, LCB_F_READ as R, LCB_F_RT as T};
    use progs::{LCB_F_SPIN as S, LCB_F_WRITE as W};
    &[
        (0, "semaphore", "semaphore"),
        (S, "spinlock", "spinlock"),
        (S | R, "rwlock:R", "rwlock"),
        (S | W, "rwlock:W", "rwlock"),
        (R, "rwsem:R", "rwsem"),
        (W, "rwsem:W", "rwsem"),
        (T, "rtmutex", "rtmutex"),
        (T | R, "rwlock-rt:R", "rwlock-rt"),
        (T | W, "rwlock-rt:W", "rwlock-rt"),
        (P | R, "pcpu-sem:R", "percpu-rwsem"),
        (P | W, "pcpu-sem:W", "percpu-rwsem"),
        (M, "mutex", "mutex"),
        (M | S, "mutex", "mutex"),
    ]
};

/// The `type` column for lock flags, `unknown` as perf prints for flags it does not know.
pub fn type_name(flags: u32) -> &'static str {
    // The bits above the type name per-object locks (`-l`), not the type.
    let flags = flags & progs::LCB_F_TYPE_MASK;
    LOCK_TYPES
        .iter()
        .find(|(f, _, _)| *f == flags)
        .map_or("unknown", |(_, short, _)| short)
}

/// The long type name (perf's `get_type_name`, as `-x` with `-l` prints it): `rwsem` for both sides.
pub fn type_long_name(flags: u32) -> &'static str {
    let flags = flags & progs::LCB_F_TYPE_MASK;
    LOCK_TYPES
        .iter()
        .find(|(f, _, _)| *f == flags)
        .map_or("unknown", |(_, _, long)| long)
}

/// The flag values a `-Y` name stands for: a short name (`rwsem:R`) one value, a long name (`rwsem`) all of
/// its variants. `None` for a name perf does not know.
pub fn type_flags(name: &str) -> Option<Vec<u32>> {
    let mut out: Vec<u32> = LOCK_TYPES
        .iter()
        .filter(|(_, short, long)| *short == name || *long == name)
        .map(|(f, _, _)| *f)
        .collect();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// The flag values of a `-Y` list (comma-separated names, see [`type_flags`]); empty for none.
pub fn type_filter(text: Option<&str>) -> Result<Vec<u32>, Error> {
    let mut types = Vec::new();
    for name in text.into_iter().flat_map(|t| t.split(',')) {
        let flags = type_flags(name.trim()).ok_or_else(|| Error::UnknownType {
            name: name.trim().into(),
        })?;
        types.extend(flags);
    }
    Ok(types)
}

/// The errors of `bport lock`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel predates the contention tracepoints.
    #[error(
        "kernel {kernel} has no lock:contention_begin/end tracepoints: they appeared in Linux {}",
        tracepoints_since()
    )]
    KernelTooOld {
        /// The kernel's version.
        kernel: String,
    },
    /// BPF is not available to this process (no CAP_BPF/CAP_PERFMON, or BPF disabled).
    #[error("BPF is not available to this process")]
    BpfDenied {
        /// What the kernel said.
        source: crate::perf::bpf::Error,
    },
    /// A BPF step failed for another reason (a refused load carries the verifier log).
    #[error(transparent)]
    Bpf(#[from] crate::perf::bpf::Error),
    /// `-Y` named a type perf does not know.
    #[error("unknown lock type {name:?}: use one of {}", known_types())]
    UnknownType {
        /// The name given.
        name: String,
    },
    /// `-L` was neither a hex address nor a kernel symbol.
    #[error(
        "bad lock {text:?}: not a hex address (0xffff...) nor a kernel symbol in /proc/kallsyms"
    )]
    BadLock {
        /// The text given.
        text: String,
    },
    /// `-p` / `--tid` named a task that does not exist.
    #[error("no such {what} {id}: /proc/{id} does not exist")]
    NoSuchTask {
        /// "process" or "thread".
        what: &'static str,
        /// The id.
        id: i32,
    },
    /// The command could not be started.
    #[error("cannot run {program:?}")]
    Exec {
        /// The program.
        program: std::ffi::OsString,
        /// Why.
        source: std::io::Error,
    },
    /// Invalid options.
    #[error("{0}")]
    InvalidOptions(String),
    /// The file has no lock:contention_begin/end samples.
    #[error("the file has no lock:contention_begin and lock:contention_end events (record them with `bport lock record` or `perf lock record`)")]
    NoLockEvents,
    /// The file could not be read.
    #[error("cannot read the recording: {0}")]
    File(String),
    /// `--kallsyms FILE` could not be read or is not a kallsyms table.
    #[error("cannot use {} as kallsyms", path.display())]
    Kallsyms {
        /// The file given.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A system call failed.
    #[error("{what} failed")]
    System {
        /// What was being done.
        what: &'static str,
        /// The system error.
        source: std::io::Error,
    },
}

fn known_types() -> String {
    let mut names: Vec<&str> = LOCK_TYPES.iter().flat_map(|(_, s, l)| [*s, *l]).collect();
    names.dedup();
    let mut seen = Vec::new();
    for n in names {
        if !seen.contains(&n) {
            seen.push(n);
        }
    }
    seen.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_follow_perfs_table() {
        assert_eq!(type_name(progs::LCB_F_WRITE), "rwsem:W");
        assert_eq!(type_name(progs::LCB_F_SPIN), "spinlock");
        assert_eq!(type_name(progs::LCB_F_MUTEX | progs::LCB_F_SPIN), "mutex");
        assert_eq!(type_name(0x40), "unknown");
        assert_eq!(
            type_name(progs::LCB_F_WRITE | progs::LCD_F_MMAP_LOCK),
            "rwsem:W"
        );
        assert_eq!(
            type_name(progs::LCB_F_SPIN | progs::LCD_F_SIGHAND_LOCK),
            "spinlock"
        );
        assert_eq!(
            type_flags("rwsem"),
            Some(vec![progs::LCB_F_READ, progs::LCB_F_WRITE])
        );
        assert_eq!(type_flags("rwsem:R"), Some(vec![progs::LCB_F_READ]));
        assert_eq!(
            type_flags("mutex"),
            Some(vec![
                progs::LCB_F_MUTEX,
                progs::LCB_F_MUTEX | progs::LCB_F_SPIN
            ])
        );
        assert_eq!(type_flags("spinlok"), None);
    }

    #[test]
    fn tracepoints_appeared_in_5_19() {
        assert!(!kernel_has_tracepoints(&"5.18.19".parse().unwrap()));
        assert!(kernel_has_tracepoints(&"5.19".parse().unwrap()));
        assert!(kernel_has_tracepoints(&"6.1.0-13-amd64".parse().unwrap()));
    }
}
