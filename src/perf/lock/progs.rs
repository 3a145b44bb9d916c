//! The two BPF programs on `lock:contention_begin` and `lock:contention_end`, emitted with [`crate::perf::bpf`]'s
//! assembler, and the maps they share.
//!
//! The design is perf's tools/perf/util/bpf_skel/lock_contention.bpf.c, without its BTF needs:
//!
//! ```text
//!  contention_begin(lock, flags)                 contention_end(lock, ret)
//!    filters (tid/tgid/type/addr maps) ─ no → 0    slot = per-CPU slot if it holds a lock, else tstamp[tid]
//!    slot = spin/rw lock? per-CPU slot             slot.lock != lock → 0 (not ours / nested inner lock)
//!           else tstamp[tid] (created)             per-CPU slot.tid != tid → stale: clear it, try tstamp[tid]
//!    slot busy (nested) → 0                        delta = now - slot.timestamp
//!    slot = {now, lock, flags, stackid(ctx), tid}  key = {stack id | tid | lock address}
//!                                                  stat[key] += delta (count, total, max, min)
//!                                                  slot.lock = 0; delete tstamp[tid]
//! ```
//!
//! Spinning locks (spinlock, rwlock; `LCB_F_SPIN` without `LCB_F_MUTEX`) cannot sleep, so a per-CPU slot holds
//! their start; a spinlock taken inside a sleeping lock's slow path (an rwsem's wait_lock) then does not clobber
//! the outer lock's per-task slot, and an occupied slot is never overwritten by a nested lock. `contention_end`
//! has no flags, so it looks at the per-CPU slot first: while a spinning lock is contended on a CPU, no sleeping
//! lock can end there. Unlike perf, the per-CPU slot also names the task that began the wait: a spinning wait
//! ends in the context that began it, so an end by another task on the same lock means the slot is stale (its
//! own end was missed, see `begin`), and counting it would add a wait the filters never let in to a task they
//! keep out. Options are constants in the instructions (no global-variable map to patch).

use super::layout::Layout;
use crate::perf::bpf::{self, Alu, Asm, Cond, Error, Helper, Insn, MapFd, Reg, Size, FP};

/// `LCB_F_SPIN` (include/trace/events/lock.h).
pub const LCB_F_SPIN: u32 = 1 << 0;
/// `LCB_F_READ`.
pub const LCB_F_READ: u32 = 1 << 1;
/// `LCB_F_WRITE`.
pub const LCB_F_WRITE: u32 = 1 << 2;
/// `LCB_F_RT`.
pub const LCB_F_RT: u32 = 1 << 3;
/// `LCB_F_PERCPU`.
pub const LCB_F_PERCPU: u32 = 1 << 4;
/// `LCB_F_MUTEX`.
pub const LCB_F_MUTEX: u32 = 1 << 5;
/// The type bits of the flags (perf's `LCB_F_TYPE_MASK`); the bits above name per-object locks.
pub const LCB_F_TYPE_MASK: u32 = 0x7f;
/// The lock is the waiter's `mm->mmap_lock` (perf's lock_data.h `LCD_F_MMAP_LOCK`, set with `-l`).
pub const LCD_F_MMAP_LOCK: u32 = 1 << 31;
/// The lock is the waiter's `sighand->siglock` (perf's `LCD_F_SIGHAND_LOCK`).
pub const LCD_F_SIGHAND_LOCK: u32 = 1 << 30;

/// What a contention is aggregated by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Aggr {
    /// The call stack (perf's default, `LOCK_AGGR_CALLER`).
    #[default]
    Caller,
    /// The waiting task (`-t`).
    Task,
    /// The lock's address (`-l`).
    Addr,
}

/// What the programs are built for.
#[derive(Clone, Debug)]
pub struct ProgConfig {
    /// The aggregation key.
    pub aggr: Aggr,
    /// Collect call stacks (always for [`Aggr::Caller`]; for the others when stacks are printed).
    pub callstack: bool,
    /// Frames the kernel drops from the top of each stack (`bpf_get_stackid`'s skip, 0–255).
    pub kernel_skip: u8,
    /// Frames kept per stack.
    pub max_stack: u32,
    /// Entries of the stat, timestamp and stack maps.
    pub map_entries: u32,
    /// Count only the thread ids in the tid filter map.
    pub filter_tid: bool,
    /// Count only the process ids in the tgid filter map.
    pub filter_tgid: bool,
    /// Count only the lock flags in the type filter map.
    pub filter_type: bool,
    /// Count only the lock addresses in the address filter map.
    pub filter_addr: bool,
    /// Count only contentions that begin on the CPUs in the CPU filter map (`-C`, perf's `cpu_filter`).
    pub filter_cpu: bool,
    /// With [`Aggr::Task`]: key by the lock's owner (perf's `-o`), read at `contention_begin`.
    pub owner: bool,
    /// Kernel struct offsets (from BTF): what is unknown is left out of the programs.
    pub layout: Layout,
    /// Possible CPUs (entries of the per-CPU run-queue map).
    pub cpus: u32,
}

/// Size of a stat key: `{s32 stack_id; u32 tid; u64 lock}`.
pub const STAT_KEY: u32 = 16;
/// Size of a stat value: `{u64 total, max, min; u32 count, flags}`.
pub const STAT_VALUE: u32 = 32;
/// Size of a wait's slot: `{u64 timestamp; u64 lock; u32 flags; s32 stack_id; u32 tid; u32 pad}`.
const TSTAMP: u32 = 32;
/// A per-CPU slot older than this is stale (see `begin`).
const STALE_NS: u64 = 1_000_000_000;
/// Size of a task name (`TASK_COMM_LEN`).
pub const COMM: u32 = 16;

/// The maps, each released when this is dropped.
#[derive(Debug)]
pub struct Maps {
    /// Per-task start of a sleeping lock's contention.
    pub tstamp: MapFd,
    /// Per-CPU start of a spinning lock's contention.
    pub tstamp_cpu: MapFd,
    /// Call stacks by id.
    pub stacks: MapFd,
    /// The aggregated statistics.
    pub stat: MapFd,
    /// Task names by tid (for `-t`).
    pub comm: MapFd,
    /// Thread-id filter.
    pub tid_filter: MapFd,
    /// Process-id filter.
    pub tgid_filter: MapFd,
    /// Lock-flags filter.
    pub type_filter: MapFd,
    /// Lock-address filter.
    pub addr_filter: MapFd,
    /// CPU filter.
    pub cpu_filter: MapFd,
    /// Each CPU's `struct rq` as the end program saw it (`-l`): run-queue locks without kernel symbols.
    pub rq_seen: MapFd,
}

impl Maps {
    /// Creates the maps for `config`.
    pub fn create(config: &ProgConfig) -> Result<Maps, Error> {
        let n = config.map_entries.max(1);
        Ok(Maps {
            tstamp: bpf::map(bpf::MAP_HASH, 4, TSTAMP, n, "lock_tstamp")?,
            tstamp_cpu: bpf::map(bpf::MAP_PERCPU_ARRAY, 4, TSTAMP, 1, "lock_tstamp_cpu")?,
            stacks: bpf::map(
                bpf::MAP_STACK_TRACE,
                4,
                8 * config.max_stack.max(1),
                n,
                "lock_stacks",
            )?,
            stat: bpf::map(bpf::MAP_HASH, STAT_KEY, STAT_VALUE, n, "lock_stat")?,
            comm: bpf::map(bpf::MAP_HASH, 4, COMM, n, "lock_comm")?,
            tid_filter: bpf::map(bpf::MAP_HASH, 4, 1, 8192, "lock_tid_filter")?,
            tgid_filter: bpf::map(bpf::MAP_HASH, 4, 1, 1024, "lock_tgid_filter")?,
            type_filter: bpf::map(bpf::MAP_HASH, 4, 1, 64, "lock_type_filter")?,
            addr_filter: bpf::map(bpf::MAP_HASH, 8, 1, 1024, "lock_addr_filter")?,
            cpu_filter: bpf::map(bpf::MAP_HASH, 4, 1, config.cpus.max(1), "lock_cpu_filter")?,
            rq_seen: bpf::map(bpf::MAP_ARRAY, 4, 8, config.cpus.max(1), "lock_rq_seen")?,
        })
    }
}

/// Looks `key` (on the stack at `fp+key_off`) up in `map`; jumps to `miss` when absent, leaves the value in R0.
fn lookup(a: &mut Asm, map: &MapFd, key_off: i16, miss: bpf::Label) {
    a.ld_map_fd(Reg::R1, map.raw())
        .mov(Reg::R2, FP)
        .alu_imm(Alu::Add, Reg::R2, i32::from(key_off))
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, miss);
}

/// The `contention_begin` program.
pub fn begin(maps: &Maps, config: &ProgConfig) -> Result<Vec<Insn>, Error> {
    // Stack: fp-8 scratch key, fp-40 a zeroed tstamp value (then fp-48 the task name).
    let mut a = Asm::new();
    let out = a.label();
    let sleeping = a.label();
    let create = a.label();
    let fill = a.label();
    a.mov(Reg::R6, Reg::R1);
    if config.filter_tid {
        a.call(Helper::GetCurrentPidTgid)
            .stx(Size::W, FP, -8, Reg::R0);
        lookup(&mut a, &maps.tid_filter, -8, out);
    }
    if config.filter_tgid {
        a.call(Helper::GetCurrentPidTgid)
            .alu_imm(Alu::Rsh, Reg::R0, 32)
            .stx(Size::W, FP, -8, Reg::R0);
        lookup(&mut a, &maps.tgid_filter, -8, out);
    }
    if config.filter_type {
        a.ldx(Size::DW, Reg::R1, Reg::R6, 8)
            .stx(Size::W, FP, -8, Reg::R1);
        lookup(&mut a, &maps.type_filter, -8, out);
    }
    if config.filter_addr {
        a.ldx(Size::DW, Reg::R1, Reg::R6, 0)
            .stx(Size::DW, FP, -8, Reg::R1);
        lookup(&mut a, &maps.addr_filter, -8, out);
    }
    // As perf's `can_record`: the CPU where the wait begins decides; the end is matched wherever it runs.
    if config.filter_cpu {
        a.call(Helper::GetSmpProcessorId)
            .stx(Size::W, FP, -8, Reg::R0);
        lookup(&mut a, &maps.cpu_filter, -8, out);
    }
    // R7 = flags; spinning locks (SPIN without MUTEX) use the per-CPU slot.
    a.ldx(Size::DW, Reg::R7, Reg::R6, 8)
        .mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::And, Reg::R1, (LCB_F_SPIN | LCB_F_MUTEX) as i32)
        .jmp_imm(Cond::Ne, Reg::R1, LCB_F_SPIN as i32, sleeping)
        .st_imm(Size::W, FP, -8, 0);
    lookup(&mut a, &maps.tstamp_cpu, -8, out);
    let free = a.label();
    a.mov(Reg::R8, Reg::R0)
        .ldx(Size::DW, Reg::R1, Reg::R8, 8)
        .jmp_imm(Cond::Eq, Reg::R1, 0, free)
        // Busy: a nested spinning lock, unless the slot is stale. A begin whose end never ran here (the end
        // program was itself running, e.g. a spinlock inside a BPF map update, and the kernel does not nest
        // a program into itself) would otherwise block this CPU for good; no spinning contention lasts a second.
        .call(Helper::KtimeGetNs)
        .ldx(Size::DW, Reg::R1, Reg::R8, 0)
        .alu(Alu::Sub, Reg::R0, Reg::R1)
        .ld_imm64(Reg::R1, STALE_NS)
        .jmp(Cond::Lt, Reg::R0, Reg::R1, out)
        .bind(free)
        .ja(fill);
    // A sleeping lock: the task's slot, created on first use.
    a.bind(sleeping)
        .call(Helper::GetCurrentPidTgid)
        .stx(Size::W, FP, -8, Reg::R0);
    lookup(&mut a, &maps.tstamp, -8, create);
    a.ldx(Size::DW, Reg::R1, Reg::R0, 8)
        .jmp_imm(Cond::Ne, Reg::R1, 0, out)
        .mov(Reg::R8, Reg::R0)
        .ja(fill);
    a.bind(create)
        .st_imm(Size::DW, FP, -40, 0)
        .st_imm(Size::DW, FP, -32, 0)
        .st_imm(Size::DW, FP, -24, 0)
        .st_imm(Size::DW, FP, -16, 0)
        .ld_map_fd(Reg::R1, maps.tstamp.raw())
        .mov(Reg::R2, FP)
        .alu_imm(Alu::Add, Reg::R2, -8)
        .mov(Reg::R3, FP)
        .alu_imm(Alu::Add, Reg::R3, -40)
        .mov_imm(Reg::R4, bpf::NOEXIST)
        .call(Helper::MapUpdateElem)
        .jmp_imm(Cond::Ne, Reg::R0, 0, out);
    lookup(&mut a, &maps.tstamp, -8, out);
    a.mov(Reg::R8, Reg::R0);
    // Fill the slot: timestamp, lock, flags, stack id, waiter.
    a.bind(fill)
        .call(Helper::GetCurrentPidTgid)
        .stx(Size::W, Reg::R8, 24, Reg::R0)
        .call(Helper::KtimeGetNs)
        .stx(Size::DW, Reg::R8, 0, Reg::R0)
        .ldx(Size::DW, Reg::R1, Reg::R6, 0)
        .stx(Size::DW, Reg::R8, 8, Reg::R1)
        .stx(Size::W, Reg::R8, 16, Reg::R7);
    if config.callstack {
        a.mov(Reg::R1, Reg::R6)
            .ld_map_fd(Reg::R2, maps.stacks.raw())
            .mov_imm(
                Reg::R3,
                bpf::F_FAST_STACK_CMP | i32::from(config.kernel_skip),
            )
            .call(Helper::GetStackid)
            .stx(Size::W, Reg::R8, 20, Reg::R0);
    } else {
        a.st_imm(Size::W, Reg::R8, 20, -1);
    }
    if config.aggr == Aggr::Task && config.owner {
        owner(&mut a, maps, config, out);
    } else if config.aggr == Aggr::Task {
        // The waiter's name, kept while the task may be gone by the time the report is made.
        a.call(Helper::GetCurrentPidTgid)
            .stx(Size::W, FP, -8, Reg::R0)
            .ld_map_fd(Reg::R1, maps.comm.raw())
            .mov(Reg::R2, FP)
            .alu_imm(Alu::Add, Reg::R2, -8)
            .call(Helper::MapLookupElem)
            .jmp_imm(Cond::Ne, Reg::R0, 0, out)
            .mov(Reg::R1, FP)
            .alu_imm(Alu::Add, Reg::R1, -48)
            .mov_imm(Reg::R2, COMM as i32)
            .call(Helper::GetCurrentComm)
            .ld_map_fd(Reg::R1, maps.comm.raw())
            .mov(Reg::R2, FP)
            .alu_imm(Alu::Add, Reg::R2, -8)
            .mov(Reg::R3, FP)
            .alu_imm(Alu::Add, Reg::R3, -48)
            .mov_imm(Reg::R4, bpf::NOEXIST)
            .call(Helper::MapUpdateElem);
    }
    a.bind(out).mov_imm(Reg::R0, 0).exit();
    Ok(a.finish()?)
}

/// The `contention_end` program.
pub fn end(maps: &Maps, config: &ProgConfig) -> Result<Vec<Insn>, Error> {
    // Stack: fp-8 the tid, fp-16 the per-CPU key, fp-32 the stat key, fp-64 a new stat value.
    let mut a = Asm::new();
    let out = a.label();
    let task = a.label();
    let found = a.label();
    let new = a.label();
    let clear = a.label();
    let no_max = a.label();
    a.mov(Reg::R6, Reg::R1);
    if config.aggr == Aggr::Addr {
        learn_rq(&mut a, maps, &config.layout);
    }
    a.call(Helper::GetCurrentPidTgid)
        .stx(Size::W, FP, -8, Reg::R0)
        .mov_imm(Reg::R9, 0)
        .st_imm(Size::W, FP, -16, 0);
    lookup(&mut a, &maps.tstamp_cpu, -16, task);
    a.ldx(Size::DW, Reg::R1, Reg::R0, 8)
        .jmp_imm(Cond::Eq, Reg::R1, 0, task)
        .ldx(Size::DW, Reg::R2, Reg::R6, 0)
        // Another lock in the slot: this end may still be a sleeping lock's (perf returns here, but then a
        // stale slot would hide every sleeping lock on this CPU).
        .jmp(Cond::Ne, Reg::R1, Reg::R2, task)
        .mov(Reg::R8, Reg::R0)
        .ldx(Size::W, Reg::R1, Reg::R8, 24)
        .ldx(Size::W, Reg::R2, FP, -8)
        .jmp(Cond::Eq, Reg::R1, Reg::R2, found)
        // This lock, another waiter: the slot is stale, and freed so this CPU counts spinning waits again.
        .st_imm(Size::DW, Reg::R8, 8, 0);
    a.bind(task);
    lookup(&mut a, &maps.tstamp, -8, out);
    a.ldx(Size::DW, Reg::R1, Reg::R0, 8)
        .ldx(Size::DW, Reg::R2, Reg::R6, 0)
        .jmp(Cond::Ne, Reg::R1, Reg::R2, out)
        .mov(Reg::R8, Reg::R0)
        .mov_imm(Reg::R9, 1);
    // R7 = the wait; a clock that went backwards is dropped.
    a.bind(found)
        .call(Helper::KtimeGetNs)
        .ldx(Size::DW, Reg::R1, Reg::R8, 0)
        .alu(Alu::Sub, Reg::R0, Reg::R1)
        .mov(Reg::R7, Reg::R0)
        .jmp_imm(Cond::Slt, Reg::R7, 0, clear)
        .st_imm(Size::DW, FP, -32, 0)
        .st_imm(Size::DW, FP, -24, 0);
    if config.aggr == Aggr::Caller || config.callstack {
        a.ldx(Size::W, Reg::R1, Reg::R8, 20)
            .stx(Size::W, FP, -32, Reg::R1);
    } else {
        a.st_imm(Size::W, FP, -32, -1);
    }
    match config.aggr {
        Aggr::Caller => {}
        Aggr::Task if config.owner => {
            // `begin` left the owner's thread id (or -1) where the flags were.
            a.ldx(Size::W, Reg::R1, Reg::R8, 16)
                .stx(Size::W, FP, -28, Reg::R1);
        }
        Aggr::Task => {
            a.call(Helper::GetCurrentPidTgid)
                .stx(Size::W, FP, -28, Reg::R0);
        }
        Aggr::Addr => {
            a.ldx(Size::DW, Reg::R1, Reg::R8, 8)
                .stx(Size::DW, FP, -24, Reg::R1);
        }
    }
    lookup(&mut a, &maps.stat, -32, new);
    let one = Reg::R1;
    a.atomic_add(Size::DW, Reg::R0, 0, Reg::R7)
        .mov_imm(one, 1)
        .atomic_add(Size::W, Reg::R0, 24, one)
        // Max and min race between CPUs (perf has the same FIXME); a lost update only loses an extreme.
        .ldx(Size::DW, Reg::R1, Reg::R0, 8)
        .jmp(Cond::Ge, Reg::R1, Reg::R7, no_max)
        .stx(Size::DW, Reg::R0, 8, Reg::R7)
        .bind(no_max)
        .ldx(Size::DW, Reg::R1, Reg::R0, 16)
        .jmp(Cond::Ge, Reg::R7, Reg::R1, clear)
        .stx(Size::DW, Reg::R0, 16, Reg::R7)
        .ja(clear);
    a.bind(new)
        .stx(Size::DW, FP, -64, Reg::R7)
        .stx(Size::DW, FP, -56, Reg::R7)
        .stx(Size::DW, FP, -48, Reg::R7)
        .st_imm(Size::W, FP, -40, 1)
        .ldx(Size::W, Reg::R1, Reg::R8, 16)
        .stx(Size::W, FP, -36, Reg::R1);
    if config.aggr == Aggr::Addr {
        lock_class(&mut a, &config.layout);
    }
    a.ld_map_fd(Reg::R1, maps.stat.raw())
        .mov(Reg::R2, FP)
        .alu_imm(Alu::Add, Reg::R2, -32)
        .mov(Reg::R3, FP)
        .alu_imm(Alu::Add, Reg::R3, -64)
        .mov_imm(Reg::R4, bpf::NOEXIST)
        .call(Helper::MapUpdateElem);
    a.bind(clear)
        .st_imm(Size::DW, Reg::R8, 8, 0)
        .jmp_imm(Cond::Eq, Reg::R9, 0, out)
        .ld_map_fd(Reg::R1, maps.tstamp.raw())
        .mov(Reg::R2, FP)
        .alu_imm(Alu::Add, Reg::R2, -8)
        .call(Helper::MapDeleteElem);
    a.bind(out).mov_imm(Reg::R0, 0).exit();
    Ok(a.finish()?)
}

/// `begin` with `-o`: replaces the slot's flags by the lock owner's thread id (perf's `get_lock_owner`: a
/// mutex's or rwsem's `owner` word with its 3 flag bits masked), -1 when there is none or it cannot be read,
/// and keeps the owner's name in the comm map. R7 holds the flags, R8 the slot. Uses fp-64..fp-88.
fn owner(a: &mut Asm, maps: &Maps, config: &ProgConfig, out: bpf::Label) {
    let none = a.label();
    let Some((mutex_owner, rwsem_owner, task_pid, task_comm)) = config.layout.owner() else {
        a.st_imm(Size::W, Reg::R8, 16, -1);
        return;
    };
    let is_mutex = a.label();
    let is_rwsem = a.label();
    let read = a.label();
    a.mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::And, Reg::R1, LCB_F_MUTEX as i32)
        .jmp_imm(Cond::Ne, Reg::R1, 0, is_mutex)
        .jmp_imm(Cond::Eq, Reg::R7, LCB_F_READ as i32, is_rwsem)
        .jmp_imm(Cond::Eq, Reg::R7, LCB_F_WRITE as i32, is_rwsem)
        .ja(none)
        .bind(is_mutex)
        .mov_imm(Reg::R3, mutex_owner as i32)
        .ja(read)
        .bind(is_rwsem)
        .mov_imm(Reg::R3, rwsem_owner as i32)
        .bind(read)
        .ldx(Size::DW, Reg::R1, Reg::R8, 8)
        .alu(Alu::Add, Reg::R3, Reg::R1);
    probe_read(a, -64, 8);
    a.jmp_imm(Cond::Ne, Reg::R0, 0, none)
        .ldx(Size::DW, Reg::R3, FP, -64)
        .alu_imm(Alu::And, Reg::R3, !7)
        .jmp_imm(Cond::Eq, Reg::R3, 0, none)
        .stx(Size::DW, FP, -64, Reg::R3)
        .alu_imm(Alu::Add, Reg::R3, task_pid as i32);
    probe_read(a, -72, 4);
    a.jmp_imm(Cond::Ne, Reg::R0, 0, none)
        .ldx(Size::DW, Reg::R3, FP, -64)
        .alu_imm(Alu::Add, Reg::R3, task_comm as i32);
    probe_read(a, -88, COMM as i32);
    a.jmp_imm(Cond::Ne, Reg::R0, 0, none)
        .ld_map_fd(Reg::R1, maps.comm.raw())
        .mov(Reg::R2, FP)
        .alu_imm(Alu::Add, Reg::R2, -72)
        .mov(Reg::R3, FP)
        .alu_imm(Alu::Add, Reg::R3, -88)
        .mov_imm(Reg::R4, bpf::NOEXIST)
        .call(Helper::MapUpdateElem)
        .ldx(Size::W, Reg::R1, FP, -72)
        .stx(Size::W, Reg::R8, 16, Reg::R1)
        .ja(out)
        .bind(none)
        .st_imm(Size::W, Reg::R8, 16, -1);
}

/// `bpf_probe_read_kernel(fp + to, len, R3)`; R0 is 0 on success.
fn probe_read(a: &mut Asm, to: i16, len: i32) {
    a.mov(Reg::R1, FP)
        .alu_imm(Alu::Add, Reg::R1, i32::from(to))
        .mov_imm(Reg::R2, len)
        .call(Helper::ProbeReadKernel);
}

/// `end` with `-l`, for a new entry: perf's `check_lock_type`. An rwsem that is the waiter's
/// `current->mm->mmap_lock` gets [`LCD_F_MMAP_LOCK`], a spinlock that is its `current->sighand->siglock`
/// [`LCD_F_SIGHAND_LOCK`], in the value's flags at fp-36. R8 holds the slot; uses fp-72.
fn lock_class(a: &mut Asm, layout: &Layout) {
    let done = a.label();
    let checks: Vec<(u32, u32, u32, Vec<u32>)> = [
        layout
            .mmap_lock()
            .map(|(t, l)| (t, l, LCD_F_MMAP_LOCK, vec![LCB_F_READ, LCB_F_WRITE])),
        layout
            .siglock()
            .map(|(t, l)| (t, l, LCD_F_SIGHAND_LOCK, vec![LCB_F_SPIN])),
    ]
    .into_iter()
    .flatten()
    .collect();
    if checks.is_empty() {
        return;
    }
    let labels: Vec<bpf::Label> = checks.iter().map(|_| a.label()).collect();
    a.ldx(Size::W, Reg::R1, Reg::R8, 16);
    for ((_, _, _, flags), &label) in checks.iter().zip(&labels) {
        for &f in flags {
            a.jmp_imm(Cond::Eq, Reg::R1, f as i32, label);
        }
    }
    a.ja(done);
    for ((task_off, lock_off, bit, _), &label) in checks.iter().zip(&labels) {
        a.bind(label)
            .call(Helper::GetCurrentTask)
            .mov(Reg::R3, Reg::R0)
            .alu_imm(Alu::Add, Reg::R3, *task_off as i32);
        probe_read(a, -72, 8);
        a.jmp_imm(Cond::Ne, Reg::R0, 0, done)
            .ldx(Size::DW, Reg::R1, FP, -72)
            .jmp_imm(Cond::Eq, Reg::R1, 0, done)
            .alu_imm(Alu::Add, Reg::R1, *lock_off as i32)
            .ldx(Size::DW, Reg::R2, Reg::R8, 8)
            .jmp(Cond::Ne, Reg::R1, Reg::R2, done)
            .ldx(Size::W, Reg::R1, FP, -36)
            .alu_imm(Alu::Or, Reg::R1, *bit as i32)
            .stx(Size::W, FP, -36, Reg::R1)
            .ja(done);
    }
    a.bind(done);
}

/// `end` with `-l`, at every contention end (whatever the filters): notes this CPU's `struct rq`
/// (`current->se.cfs_rq->rq`) in `rq_seen` while its slot is empty, so run-queue locks can be named on kernels
/// where `runqueues` has no kallsyms address (perf's `collect_lock_syms` fails there). Every end counts, not
/// only the entries kept: with `-L` one rq lock's contentions may all end on other CPUs than its own. A CPU
/// that never ends a contention stays unknown. Uses fp-72..fp-80; clobbers R0-R5.
fn learn_rq(a: &mut Asm, maps: &Maps, layout: &Layout) {
    let Some((task_cfs_rq, cfs_rq_rq)) = layout.task_rq() else {
        return;
    };
    let done = a.label();
    a.call(Helper::GetSmpProcessorId)
        .stx(Size::W, FP, -76, Reg::R0);
    lookup(a, &maps.rq_seen, -76, done);
    a.ldx(Size::DW, Reg::R1, Reg::R0, 0)
        .jmp_imm(Cond::Ne, Reg::R1, 0, done)
        .call(Helper::GetCurrentTask)
        .mov(Reg::R3, Reg::R0)
        .alu_imm(Alu::Add, Reg::R3, task_cfs_rq as i32);
    probe_read(a, -72, 8);
    a.jmp_imm(Cond::Ne, Reg::R0, 0, done)
        .ldx(Size::DW, Reg::R3, FP, -72)
        .jmp_imm(Cond::Eq, Reg::R3, 0, done)
        .alu_imm(Alu::Add, Reg::R3, cfs_rq_rq as i32);
    probe_read(a, -72, 8);
    a.jmp_imm(Cond::Ne, Reg::R0, 0, done)
        .call(Helper::GetSmpProcessorId)
        .stx(Size::W, FP, -76, Reg::R0);
    lookup(a, &maps.rq_seen, -76, done);
    a.ldx(Size::DW, Reg::R1, FP, -72)
        .stx(Size::DW, Reg::R0, 0, Reg::R1)
        .bind(done);
}

/// A program for `BPF_PROG_TEST_RUN` that stores each possible CPU's `&runqueues` (its `struct rq`) in
/// `out[cpu]` (an array of `cpus` u64), as perf's `collect_lock_syms` does; `rq_lock` is added by the caller.
/// The kernel refuses it at load when kallsyms does not list `runqueues` (CONFIG_KALLSYMS_ALL=n), which only
/// leaves rq locks unnamed.
pub fn runqueues(out: &MapFd, runqueues_btf_id: u32, cpus: u32) -> Result<Vec<Insn>, Error> {
    let mut a = Asm::new();
    for cpu in 0..cpus {
        let next = a.label();
        a.ld_btf_id(Reg::R1, runqueues_btf_id)
            .mov_imm(Reg::R2, cpu as i32)
            .call(Helper::PerCpuPtr)
            .jmp_imm(Cond::Eq, Reg::R0, 0, next)
            .mov(Reg::R7, Reg::R0)
            .st_imm(Size::W, FP, -8, cpu as i32);
        lookup(&mut a, out, -8, next);
        a.stx(Size::DW, Reg::R0, 0, Reg::R7).bind(next);
    }
    a.mov_imm(Reg::R0, 0).exit();
    Ok(a.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::sys;

    /// The waits the stat map holds, as (tid, count).
    fn counted(maps: &Maps) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut key = None;
        while let Some(k) = maps.stat.next_key(key.as_deref()).unwrap() {
            let v = maps.stat.lookup(&k).unwrap().unwrap();
            out.push((
                u32::from_ne_bytes(k[4..8].try_into().unwrap()),
                u32::from_ne_bytes(v[24..28].try_into().unwrap()),
            ));
            key = Some(k);
        }
        out
    }

    #[test]
    fn a_spinning_wait_counts_only_for_the_task_that_began_it() {
        if !crate::test_require::require_root("bpf()") {
            return;
        }
        let (cpu, me) = (sys::current_cpu().unwrap(), sys::gettid());
        let config = ProgConfig {
            aggr: Aggr::Task,
            callstack: false,
            kernel_skip: 0,
            max_stack: 1,
            map_entries: 64,
            filter_tid: true,
            filter_tgid: false,
            filter_type: false,
            filter_addr: false,
            filter_cpu: false,
            owner: false,
            layout: Layout::default(),
            cpus: 1,
        };
        let maps = Maps::create(&config).unwrap();
        maps.tid_filter.update(&me.to_ne_bytes(), &[1]).unwrap();
        let begin = bpf::load_raw_tracepoint("b", &begin(&maps, &config).unwrap()).unwrap();
        let end = bpf::load_raw_tracepoint("e", &end(&maps, &config).unwrap()).unwrap();
        let spin = u64::from(LCB_F_SPIN);
        let (lock, other_lock) = (0xffff_8880_0bad_0040_u64, 0xffff_8880_0bad_0080_u64);
        sys::pin_thread_to(cpu).unwrap();

        // This thread's spinning wait is in the CPU's slot; another thread on the CPU ends a wait on the same
        // lock (its begin was filtered out, so its own end was missed): not counted, for it or for anyone.
        begin.test_run_with(&[lock, spin]).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                sys::pin_thread_to(cpu).unwrap();
                end.test_run_with(&[lock, 0]).unwrap();
            })
            .join()
            .unwrap()
        });
        assert_eq!(counted(&maps), []);

        // That end freed the stale slot: the next spinning wait here begins and is counted for this thread.
        begin.test_run_with(&[other_lock, spin]).unwrap();
        end.test_run_with(&[other_lock, 0]).unwrap();
        assert_eq!(counted(&maps), [(me, 1)]);
    }

    #[test]
    fn every_configuration_passes_the_verifier() {
        if !crate::test_require::require_root("bpf()") {
            return;
        }
        for aggr in [Aggr::Caller, Aggr::Task, Aggr::Addr] {
            for bits in 0..64u32 {
                let config = ProgConfig {
                    aggr,
                    callstack: aggr == Aggr::Caller || bits & 1 != 0,
                    kernel_skip: 0,
                    max_stack: 8,
                    map_entries: 64,
                    filter_tid: bits & 2 != 0,
                    filter_tgid: bits & 4 != 0,
                    filter_type: bits & 8 != 0,
                    filter_addr: bits & 16 != 0,
                    filter_cpu: bits & 32 != 0,
                    owner: aggr == Aggr::Task && bits & 1 != 0,
                    layout: if bits & 2 != 0 {
                        Layout::default()
                    } else {
                        super::super::layout::Layout::running().0
                    },
                    cpus: 4,
                };
                let maps = Maps::create(&config).unwrap();
                for (name, insns) in [("b", begin(&maps, &config)), ("e", end(&maps, &config))] {
                    if let Err(e) = bpf::load_raw_tracepoint(name, &insns.unwrap()) {
                        panic!("{aggr:?} {bits:#b} {name}: {e}");
                    }
                }
            }
        }
    }
}
