//! The kernel struct layout `bport lock` needs to name per-object locks and find lock owners, read from the
//! kernel's BTF (`/sys/kernel/btf/vmlinux`, through `perf::probe::btf`, the one BTF reader).
//!
//! perf's BPF program (tools/perf/util/bpf_skel/lock_contention.bpf.c) learns these offsets from CO-RE
//! relocations at load time; bport's programs are assembled at run time, so it reads the same members here and
//! bakes the offsets into the instructions. Every field is optional: a kernel whose BTF lacks a type, a member
//! or the `runqueues` variable (which fails perf's skeleton build) only leaves that lock unnamed or its owner
//! unknown; nothing here can stop a session.

use std::path::Path;

use crate::perf::probe::btf::Btf;

/// Where the kernel's BTF lives.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Byte offsets of the members bport reads, and the id of the per-CPU `runqueues` variable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// `task_struct.mm`.
    pub task_mm: Option<u32>,
    /// `mm_struct.mmap_lock` (`mmap_sem` before 5.8).
    pub mm_mmap_lock: Option<u32>,
    /// `task_struct.sighand`.
    pub task_sighand: Option<u32>,
    /// `sighand_struct.siglock`.
    pub sighand_siglock: Option<u32>,
    /// `task_struct.pid` (the thread id).
    pub task_pid: Option<u32>,
    /// `task_struct.comm`.
    pub task_comm: Option<u32>,
    /// `mutex.owner` (an `atomic_long_t`: the owner's task pointer, flags in the low 3 bits).
    pub mutex_owner: Option<u32>,
    /// `rw_semaphore.owner` (the same shape; for readers, the last reader).
    pub rwsem_owner: Option<u32>,
    /// The BTF id of the per-CPU variable `runqueues`.
    pub runqueues: Option<u32>,
    /// `rq.__lock` (`lock` before 5.14).
    pub rq_lock: Option<u32>,
    /// `task_struct.se` + `sched_entity.cfs_rq` (CONFIG_FAIR_GROUP_SCHED): where a task's CFS run queue
    /// pointer is, the way to its CPU's `struct rq` that needs no kernel symbol.
    pub task_cfs_rq: Option<u32>,
    /// `cfs_rq.rq`.
    pub cfs_rq_rq: Option<u32>,
}

impl Layout {
    /// The running kernel's layout; all unknown when its BTF cannot be read (the reason is returned too).
    pub fn running() -> (Layout, Option<String>) {
        Self::from_file(Path::new(VMLINUX_BTF))
    }

    /// The layout from a BTF file; all unknown, with the reason, when it cannot be read.
    pub fn from_file(path: &Path) -> (Layout, Option<String>) {
        match Btf::open(path) {
            Ok(btf) => (Layout::from_btf(&btf), None),
            Err(e) => (Layout::default(), Some(e.to_string())),
        }
    }

    /// The layout from parsed BTF.
    pub fn from_btf(btf: &Btf) -> Layout {
        let member = |ty: &str, names: &[&str]| {
            let id = btf.struct_id(ty)?;
            names
                .iter()
                .find_map(|n| btf.member(id, n).map(|(off, _)| off))
        };
        Layout {
            task_mm: member("task_struct", &["mm"]),
            mm_mmap_lock: member("mm_struct", &["mmap_lock", "mmap_sem"]),
            task_sighand: member("task_struct", &["sighand"]),
            sighand_siglock: member("sighand_struct", &["siglock"]),
            task_pid: member("task_struct", &["pid"]),
            task_comm: member("task_struct", &["comm"]),
            mutex_owner: member("mutex", &["owner"]),
            rwsem_owner: member("rw_semaphore", &["owner"]),
            runqueues: btf.var_id("runqueues"),
            rq_lock: member("rq", &["__lock", "lock"]),
            task_cfs_rq: member("task_struct", &["se"])
                .zip(member("sched_entity", &["cfs_rq"]))
                .map(|(a, b)| a + b),
            cfs_rq_rq: member("cfs_rq", &["rq"]),
        }
    }

    /// `(task_struct.mm, mm_struct.mmap_lock)` when both are known.
    pub fn mmap_lock(&self) -> Option<(u32, u32)> {
        Some((self.task_mm?, self.mm_mmap_lock?))
    }

    /// `(task_struct.sighand, sighand_struct.siglock)` when both are known.
    pub fn siglock(&self) -> Option<(u32, u32)> {
        Some((self.task_sighand?, self.sighand_siglock?))
    }

    /// `(task → its cfs_rq pointer, cfs_rq.rq)` when both are known.
    pub fn task_rq(&self) -> Option<(u32, u32)> {
        Some((self.task_cfs_rq?, self.cfs_rq_rq?))
    }

    /// What is needed to name a lock's owner: `(mutex.owner, rw_semaphore.owner, task_struct.pid,
    /// task_struct.comm)`.
    pub fn owner(&self) -> Option<(u32, u32, u32, u32)> {
        Some((
            self.mutex_owner?,
            self.rwsem_owner?,
            self.task_pid?,
            self.task_comm?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_kernels_layout_or_a_reason() {
        let (layout, why) = Layout::running();
        if let Some(why) = why {
            // No BTF here: everything unknown, nothing fails.
            assert_eq!(layout, Layout::default(), "{why}");
            return;
        }
        // Offsets inside the structs they name (sizes from the same BTF would be our own reader again; the
        // integration test checks the mmap_lock offset against bpftool and a kernel tracepoint).
        let (mm, lock) = layout
            .mmap_lock()
            .expect("task_struct.mm and mm_struct.mmap_lock");
        assert!(mm > 0 && lock < 4096, "{layout:?}");
        assert!(layout.siglock().is_some(), "{layout:?}");
        assert!(layout.owner().is_some(), "{layout:?}");
    }

    #[test]
    fn a_missing_file_leaves_everything_unknown() {
        let (layout, why) = Layout::from_file(Path::new("/nonexistent/vmlinux"));
        assert_eq!(layout, Layout::default());
        assert!(why.unwrap().contains("/nonexistent/vmlinux"));
    }
}
