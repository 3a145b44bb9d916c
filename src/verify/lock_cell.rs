//! The lock-contention cell of `verify`: on the target kernel, `bport lock contention` must see the
//! contention of a known workload with the expected callers; below Linux 5.19 (no `lock:contention_begin/end`,
//! decided by the ABI table) the cell is `unsupported` with that reason.
//!
//! The workload runs inside bport (so it needs no binary in the VM's initramfs): threads that allocate and free
//! 40 MB buffers, which glibc serves with mmap/munmap (above its largest mmap threshold, 32 MB) and which are
//! touched, so the threads write-lock their process's mmap_lock against each other and against their page faults.
//! Expected: rwsem contention whose caller is an mm syscall path (`vm_mmap_pgoff`, `__vm_munmap`, `vm_munmap`).

use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::perf::abi::KernelVersion;
use crate::perf::lock::{self, report, LiveOptions, ReportOptions, Target};

/// The cell's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum LockCell {
    /// The expected callers were seen.
    Pass {
        /// The workload's rwsem callers, most waited-on first.
        callers: Vec<String>,
        /// Contentions counted for them.
        contentions: u64,
    },
    /// Counting failed or did not show the expected callers.
    Fail {
        /// Why.
        reason: String,
    },
    /// The kernel cannot do it.
    Unsupported {
        /// Why.
        reason: String,
    },
}

impl LockCell {
    /// Whether the cell does not fail the report.
    pub fn is_ok(&self) -> bool {
        !matches!(self, LockCell::Fail { .. })
    }
}

/// Threads of the workload.
const THREADS: usize = 4;
/// Above glibc's largest dynamic mmap threshold, so every buffer is its own mmap.
const BUFFER: usize = 40 << 20;

fn hammer(until: Instant) {
    while Instant::now() < until {
        let mut v = vec![0u8; BUFFER];
        v[0] = 1;
        v[BUFFER / 2] = 1;
        std::hint::black_box(&v);
    }
}

/// Whether a caller is one of the mm syscall paths that take mmap_lock for writing.
fn is_mm_caller(name: &str) -> bool {
    let f = name.split('+').next().unwrap_or(name);
    [
        "vm_mmap_pgoff",
        "__vm_munmap",
        "vm_munmap",
        "do_vmi_munmap",
        "__do_sys_brk",
    ]
    .contains(&f)
}

/// Runs the cell for kernel `version` (the running kernel unless the verify is capped to another version).
pub fn run(version: &KernelVersion, workload_ms: u32) -> LockCell {
    if !lock::kernel_has_tracepoints(version) {
        return LockCell::Unsupported {
            reason: format!(
                "lock:contention_begin/end appeared in Linux {}; kernel {version} lacks them",
                lock::tracepoints_since()
            ),
        };
    }
    let ms = u64::from(workload_ms.max(500));
    let options = LiveOptions {
        target: Target::Pids(vec![std::process::id() as i32]),
        duration: Some(Duration::from_millis(ms + 200)),
        ..LiveOptions::default()
    };
    let mut workers = Vec::new();
    let mut start = || {
        let until = Instant::now() + Duration::from_millis(ms);
        for _ in 0..THREADS {
            workers.push(std::thread::spawn(move || hammer(until)));
        }
    };
    let outcome = lock::contention(&options, &AtomicBool::new(false), &mut start);
    for w in workers {
        let _ = w.join();
    }
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            return LockCell::Fail {
                reason: format!("bport lock contention failed: {e}"),
            }
        }
    };
    let rep = report::from_live(
        &outcome.stats,
        &report::Symbolizer::running(),
        &ReportOptions::default(),
        &outcome.rq_locks,
    );
    let mm: Vec<_> = rep
        .entries
        .iter()
        .filter(|e| lock::type_name(e.flags).starts_with("rwsem") && is_mm_caller(&e.name))
        .collect();
    if mm.is_empty() {
        let seen: Vec<String> = rep.entries.iter().take(5).map(|e| e.name.clone()).collect();
        return LockCell::Fail {
            reason: format!(
                "no mmap_lock contention from vm_mmap_pgoff/__vm_munmap in {} entries (top callers: {})",
                rep.entries.len(),
                seen.join(", ")
            ),
        };
    }
    let mut callers: Vec<String> = Vec::new();
    for e in &mm {
        let f = e.name.split('+').next().unwrap_or(&e.name).to_string();
        if !callers.contains(&f) {
            callers.push(f);
        }
    }
    LockCell::Pass {
        callers,
        contentions: mm.iter().map(|e| e.count).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_before_5_19_are_unsupported_with_the_reason() {
        let cell = run(&"5.10".parse().unwrap(), 100);
        assert_eq!(
            cell,
            LockCell::Unsupported {
                reason: "lock:contention_begin/end appeared in Linux 5.19; kernel 5.10 lacks them"
                    .into()
            }
        );
        assert!(cell.is_ok());
        assert!(is_mm_caller("__vm_munmap+0xa7") && !is_mm_caller("lock_mm_and_find_vma+0x9e"));
    }
}
