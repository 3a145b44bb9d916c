//! When each piece of the perf ABI appeared: kernel versions for what the kernel produces (attr layout, flags,
//! sample bits, record types, branch filters) and perf versions for what perf writes into perf.data (header
//! features, user record types). perf ships with the kernel, so "the perf of kernel V's era" is perf V.
//!
//! Sources: the man page perf_event_open(2), uapi perf_event.h, tools/perf/util/header.h and event.h, and the
//! commits that added each item. "(u)" marks versions inferred from patch dates, not from a tag.

use super::consts::*;

/// The version a table entry appeared in (`major.minor`, and the patch level for the 2.6.x series, where
/// features arrived in "patch" releases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Since {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch level (only meaningful for 2.6.x).
    pub patch: u32,
}

const fn v(major: u32, minor: u32) -> Since {
    Since {
        major,
        minor,
        patch: 0,
    }
}

const fn v26(patch: u32) -> Since {
    Since {
        major: 2,
        minor: 6,
        patch,
    }
}

impl std::fmt::Display for Since {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.patch != 0 {
            write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
        } else {
            write!(f, "{}.{}", self.major, self.minor)
        }
    }
}

/// One entry of the table: a value (a bit mask, a type number or a size), its name and when it appeared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbiItem {
    /// The value: a bit mask for flags/sample/branch bits, the number for record types and features, the size in
    /// bytes for attr layouts.
    pub value: u64,
    /// The kernel's name for it.
    pub name: &'static str,
    /// The kernel (or, for perf.data-only items, perf) version that first had it.
    pub since: Since,
}

const fn item(value: u64, name: &'static str, since: Since) -> AbiItem {
    AbiItem { value, name, since }
}

/// `perf_event_attr` sizes.
pub const ATTR_SIZES: &[AbiItem] = &[
    item(PERF_ATTR_SIZE_VER0 as u64, "VER0", v26(31)),
    // config2/bp_len came with breakpoints.
    item(PERF_ATTR_SIZE_VER1 as u64, "VER1", v26(33)),
    item(PERF_ATTR_SIZE_VER2 as u64, "VER2", v(3, 4)),
    item(PERF_ATTR_SIZE_VER3 as u64, "VER3", v(3, 7)),
    item(PERF_ATTR_SIZE_VER4 as u64, "VER4", v(3, 19)),
    item(PERF_ATTR_SIZE_VER5 as u64, "VER5", v(4, 1)),
    item(PERF_ATTR_SIZE_VER6 as u64, "VER6", v(5, 5)),
    item(PERF_ATTR_SIZE_VER7 as u64, "VER7", v(5, 13)),
    // (u) config3: LKML patch rebased on v6.2-rc1, merged for 6.3.
    item(PERF_ATTR_SIZE_VER8 as u64, "VER8", v(6, 3)),
];

/// `perf_event_attr` flag bits.
pub const ATTR_FLAGS: &[AbiItem] = &[
    item(ATTR_FLAG_DISABLED, "disabled", v26(31)),
    item(ATTR_FLAG_INHERIT, "inherit", v26(31)),
    item(ATTR_FLAG_PINNED, "pinned", v26(31)),
    item(ATTR_FLAG_EXCLUSIVE, "exclusive", v26(31)),
    item(ATTR_FLAG_EXCLUDE_USER, "exclude_user", v26(31)),
    item(ATTR_FLAG_EXCLUDE_KERNEL, "exclude_kernel", v26(31)),
    item(ATTR_FLAG_EXCLUDE_HV, "exclude_hv", v26(31)),
    item(ATTR_FLAG_EXCLUDE_IDLE, "exclude_idle", v26(31)),
    item(ATTR_FLAG_MMAP, "mmap", v26(31)),
    item(ATTR_FLAG_COMM, "comm", v26(31)),
    item(ATTR_FLAG_FREQ, "freq", v26(31)),
    item(ATTR_FLAG_INHERIT_STAT, "inherit_stat", v26(31)),
    item(ATTR_FLAG_ENABLE_ON_EXEC, "enable_on_exec", v26(31)),
    item(ATTR_FLAG_TASK, "task", v26(31)),
    item(ATTR_FLAG_WATERMARK, "watermark", v26(31)),
    item(ATTR_PRECISE_IP_MASK, "precise_ip", v26(35)),
    item(ATTR_FLAG_MMAP_DATA, "mmap_data", v26(36)),
    item(ATTR_FLAG_SAMPLE_ID_ALL, "sample_id_all", v26(38)),
    item(ATTR_FLAG_EXCLUDE_HOST, "exclude_host", v(3, 2)),
    item(ATTR_FLAG_EXCLUDE_GUEST, "exclude_guest", v(3, 2)),
    item(
        ATTR_FLAG_EXCLUDE_CALLCHAIN_KERNEL,
        "exclude_callchain_kernel",
        v(3, 7),
    ),
    item(
        ATTR_FLAG_EXCLUDE_CALLCHAIN_USER,
        "exclude_callchain_user",
        v(3, 7),
    ),
    // Committed in 3.12 but disabled before release; usable from 3.16 (man page).
    item(ATTR_FLAG_MMAP2, "mmap2", v(3, 16)),
    item(ATTR_FLAG_COMM_EXEC, "comm_exec", v(3, 16)),
    item(ATTR_FLAG_USE_CLOCKID, "use_clockid", v(4, 1)),
    item(ATTR_FLAG_CONTEXT_SWITCH, "context_switch", v(4, 3)),
    item(ATTR_FLAG_WRITE_BACKWARD, "write_backward", v(4, 6)),
    item(ATTR_FLAG_NAMESPACES, "namespaces", v(4, 11)),
    item(ATTR_FLAG_KSYMBOL, "ksymbol", v(5, 0)),
    item(ATTR_FLAG_BPF_EVENT, "bpf_event", v(5, 0)),
    item(ATTR_FLAG_AUX_OUTPUT, "aux_output", v(5, 4)),
    item(ATTR_FLAG_CGROUP, "cgroup", v(5, 7)),
    item(ATTR_FLAG_TEXT_POKE, "text_poke", v(5, 8)),
    item(ATTR_FLAG_BUILD_ID, "build_id", v(5, 12)),
    item(ATTR_FLAG_INHERIT_THREAD, "inherit_thread", v(5, 13)),
    item(ATTR_FLAG_REMOVE_ON_EXEC, "remove_on_exec", v(5, 13)),
    item(ATTR_FLAG_SIGTRAP, "sigtrap", v(5, 13)),
    // (u) deferred user callchains series.
    item(ATTR_FLAG_DEFER_CALLCHAIN, "defer_callchain", v(6, 19)),
];

/// `PERF_SAMPLE_*` bits.
pub const SAMPLE_TYPES: &[AbiItem] = &[
    item(PERF_SAMPLE_IP, "IP", v26(31)),
    item(PERF_SAMPLE_TID, "TID", v26(31)),
    item(PERF_SAMPLE_TIME, "TIME", v26(31)),
    item(PERF_SAMPLE_ADDR, "ADDR", v26(31)),
    item(PERF_SAMPLE_READ, "READ", v26(31)),
    item(PERF_SAMPLE_CALLCHAIN, "CALLCHAIN", v26(31)),
    item(PERF_SAMPLE_ID, "ID", v26(31)),
    item(PERF_SAMPLE_CPU, "CPU", v26(31)),
    item(PERF_SAMPLE_PERIOD, "PERIOD", v26(31)),
    item(PERF_SAMPLE_STREAM_ID, "STREAM_ID", v26(31)),
    item(PERF_SAMPLE_RAW, "RAW", v26(31)),
    item(PERF_SAMPLE_BRANCH_STACK, "BRANCH_STACK", v(3, 4)),
    item(PERF_SAMPLE_REGS_USER, "REGS_USER", v(3, 7)),
    item(PERF_SAMPLE_STACK_USER, "STACK_USER", v(3, 7)),
    item(PERF_SAMPLE_WEIGHT, "WEIGHT", v(3, 10)),
    item(PERF_SAMPLE_DATA_SRC, "DATA_SRC", v(3, 10)),
    item(PERF_SAMPLE_IDENTIFIER, "IDENTIFIER", v(3, 12)),
    item(PERF_SAMPLE_TRANSACTION, "TRANSACTION", v(3, 13)),
    item(PERF_SAMPLE_REGS_INTR, "REGS_INTR", v(3, 19)),
    item(PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR", v(4, 13)),
    item(PERF_SAMPLE_AUX, "AUX", v(5, 5)),
    item(PERF_SAMPLE_CGROUP, "CGROUP", v(5, 7)),
    item(PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE", v(5, 11)),
    item(PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE", v(5, 11)),
    item(PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT_STRUCT", v(5, 12)),
];

/// `PERF_FORMAT_*` (read_format) bits.
pub const READ_FORMATS: &[AbiItem] = &[
    item(
        PERF_FORMAT_TOTAL_TIME_ENABLED,
        "TOTAL_TIME_ENABLED",
        v26(31),
    ),
    item(
        PERF_FORMAT_TOTAL_TIME_RUNNING,
        "TOTAL_TIME_RUNNING",
        v26(31),
    ),
    item(PERF_FORMAT_ID, "ID", v26(31)),
    item(PERF_FORMAT_GROUP, "GROUP", v26(31)),
    item(PERF_FORMAT_LOST, "LOST", v(6, 0)),
];

/// `PERF_SAMPLE_BRANCH_*` bits.
pub const BRANCH_SAMPLE_TYPES: &[AbiItem] = &[
    item(PERF_SAMPLE_BRANCH_USER, "USER", v(3, 4)),
    item(PERF_SAMPLE_BRANCH_KERNEL, "KERNEL", v(3, 4)),
    item(PERF_SAMPLE_BRANCH_HV, "HV", v(3, 4)),
    item(PERF_SAMPLE_BRANCH_ANY, "ANY", v(3, 4)),
    item(PERF_SAMPLE_BRANCH_ANY_CALL, "ANY_CALL", v(3, 4)),
    item(PERF_SAMPLE_BRANCH_ANY_RETURN, "ANY_RETURN", v(3, 4)),
    item(PERF_SAMPLE_BRANCH_IND_CALL, "IND_CALL", v(3, 4)),
    item(PERF_SAMPLE_BRANCH_ABORT_TX, "ABORT_TX", v(3, 11)),
    item(PERF_SAMPLE_BRANCH_IN_TX, "IN_TX", v(3, 11)),
    item(PERF_SAMPLE_BRANCH_NO_TX, "NO_TX", v(3, 11)),
    item(PERF_SAMPLE_BRANCH_COND, "COND", v(3, 16)),
    item(PERF_SAMPLE_BRANCH_CALL_STACK, "CALL_STACK", v(4, 1)),
    item(PERF_SAMPLE_BRANCH_IND_JUMP, "IND_JUMP", v(4, 2)),
    item(PERF_SAMPLE_BRANCH_CALL, "CALL", v(4, 4)),
    // (u) NO_FLAGS/NO_CYCLES/TYPE_SAVE from the 4.14 branch-type series; PRIV_SAVE 6.1; COUNTERS 6.8.
    item(PERF_SAMPLE_BRANCH_NO_FLAGS, "NO_FLAGS", v(4, 14)),
    item(PERF_SAMPLE_BRANCH_NO_CYCLES, "NO_CYCLES", v(4, 14)),
    item(PERF_SAMPLE_BRANCH_TYPE_SAVE, "TYPE_SAVE", v(4, 14)),
    item(PERF_SAMPLE_BRANCH_HW_INDEX, "HW_INDEX", v(5, 7)),
    item(PERF_SAMPLE_BRANCH_PRIV_SAVE, "PRIV_SAVE", v(6, 1)),
    item(PERF_SAMPLE_BRANCH_COUNTERS, "COUNTERS", v(6, 8)),
];

/// Kernel `PERF_RECORD_*` types.
pub const RECORD_TYPES: &[AbiItem] = &[
    item(PERF_RECORD_MMAP as u64, "MMAP", v26(31)),
    item(PERF_RECORD_LOST as u64, "LOST", v26(31)),
    item(PERF_RECORD_COMM as u64, "COMM", v26(31)),
    item(PERF_RECORD_EXIT as u64, "EXIT", v26(31)),
    item(PERF_RECORD_THROTTLE as u64, "THROTTLE", v26(31)),
    item(PERF_RECORD_UNTHROTTLE as u64, "UNTHROTTLE", v26(31)),
    item(PERF_RECORD_FORK as u64, "FORK", v26(31)),
    item(PERF_RECORD_READ as u64, "READ", v26(31)),
    item(PERF_RECORD_SAMPLE as u64, "SAMPLE", v26(31)),
    // In the 3.12 uapi but only usable from 3.16 (man page).
    item(PERF_RECORD_MMAP2 as u64, "MMAP2", v(3, 16)),
    item(PERF_RECORD_AUX as u64, "AUX", v(4, 1)),
    item(PERF_RECORD_ITRACE_START as u64, "ITRACE_START", v(4, 1)),
    item(PERF_RECORD_LOST_SAMPLES as u64, "LOST_SAMPLES", v(4, 2)),
    item(PERF_RECORD_SWITCH as u64, "SWITCH", v(4, 3)),
    item(
        PERF_RECORD_SWITCH_CPU_WIDE as u64,
        "SWITCH_CPU_WIDE",
        v(4, 3),
    ),
    item(PERF_RECORD_NAMESPACES as u64, "NAMESPACES", v(4, 11)),
    item(PERF_RECORD_KSYMBOL as u64, "KSYMBOL", v(5, 0)),
    item(PERF_RECORD_BPF_EVENT as u64, "BPF_EVENT", v(5, 0)),
    item(PERF_RECORD_CGROUP as u64, "CGROUP", v(5, 7)),
    item(PERF_RECORD_TEXT_POKE as u64, "TEXT_POKE", v(5, 8)),
    item(
        PERF_RECORD_AUX_OUTPUT_HW_ID as u64,
        "AUX_OUTPUT_HW_ID",
        v(5, 16),
    ),
    // (u)
    item(
        PERF_RECORD_CALLCHAIN_DEFERRED as u64,
        "CALLCHAIN_DEFERRED",
        v(6, 19),
    ),
];

/// User (perf-synthesized) record types with the perf version that first wrote them.
pub const USER_RECORD_TYPES: &[AbiItem] = &[
    item(PERF_RECORD_HEADER_ATTR as u64, "HEADER_ATTR", v26(35)),
    item(
        PERF_RECORD_HEADER_EVENT_TYPE as u64,
        "HEADER_EVENT_TYPE",
        v26(35),
    ),
    item(
        PERF_RECORD_HEADER_TRACING_DATA as u64,
        "HEADER_TRACING_DATA",
        v26(35),
    ),
    item(
        PERF_RECORD_HEADER_BUILD_ID as u64,
        "HEADER_BUILD_ID",
        v26(35),
    ),
    item(PERF_RECORD_FINISHED_ROUND as u64, "FINISHED_ROUND", v26(35)),
    item(PERF_RECORD_ID_INDEX as u64, "ID_INDEX", v(3, 19)),
    item(PERF_RECORD_AUXTRACE_INFO as u64, "AUXTRACE_INFO", v(4, 1)),
    item(PERF_RECORD_AUXTRACE as u64, "AUXTRACE", v(4, 1)),
    item(PERF_RECORD_AUXTRACE_ERROR as u64, "AUXTRACE_ERROR", v(4, 1)),
    item(PERF_RECORD_THREAD_MAP as u64, "THREAD_MAP", v(4, 4)),
    item(PERF_RECORD_CPU_MAP as u64, "CPU_MAP", v(4, 4)),
    item(PERF_RECORD_STAT_CONFIG as u64, "STAT_CONFIG", v(4, 5)),
    item(PERF_RECORD_STAT as u64, "STAT", v(4, 5)),
    item(PERF_RECORD_STAT_ROUND as u64, "STAT_ROUND", v(4, 5)),
    item(PERF_RECORD_EVENT_UPDATE as u64, "EVENT_UPDATE", v(4, 5)),
    item(PERF_RECORD_TIME_CONV as u64, "TIME_CONV", v(4, 6)),
    item(
        PERF_RECORD_HEADER_FEATURE as u64,
        "HEADER_FEATURE",
        v(4, 13),
    ),
    item(PERF_RECORD_COMPRESSED as u64, "COMPRESSED", v(5, 2)),
    item(PERF_RECORD_FINISHED_INIT as u64, "FINISHED_INIT", v(5, 18)),
    item(PERF_RECORD_COMPRESSED2 as u64, "COMPRESSED2", v(6, 16)),
    item(PERF_RECORD_BPF_METADATA as u64, "BPF_METADATA", v(6, 16)),
    item(PERF_RECORD_SCHEDSTAT_CPU as u64, "SCHEDSTAT_CPU", v(6, 19)),
    item(
        PERF_RECORD_SCHEDSTAT_DOMAIN as u64,
        "SCHEDSTAT_DOMAIN",
        v(6, 19),
    ),
];

/// Header feature sections with the perf version that first wrote them.
pub const HEADER_FEATURES: &[AbiItem] = &[
    item(HEADER_TRACING_DATA as u64, "TRACING_DATA", v26(33)),
    item(HEADER_BUILD_ID as u64, "BUILD_ID", v26(33)),
    // The "self-descriptive perf.data" set, commit fbe96f29ce4b.
    item(HEADER_HOSTNAME as u64, "HOSTNAME", v(3, 2)),
    item(HEADER_OSRELEASE as u64, "OSRELEASE", v(3, 2)),
    item(HEADER_VERSION as u64, "VERSION", v(3, 2)),
    item(HEADER_ARCH as u64, "ARCH", v(3, 2)),
    item(HEADER_NRCPUS as u64, "NRCPUS", v(3, 2)),
    item(HEADER_CPUDESC as u64, "CPUDESC", v(3, 2)),
    item(HEADER_CPUID as u64, "CPUID", v(3, 2)),
    item(HEADER_TOTAL_MEM as u64, "TOTAL_MEM", v(3, 2)),
    item(HEADER_CMDLINE as u64, "CMDLINE", v(3, 2)),
    item(HEADER_EVENT_DESC as u64, "EVENT_DESC", v(3, 2)),
    item(HEADER_CPU_TOPOLOGY as u64, "CPU_TOPOLOGY", v(3, 2)),
    item(HEADER_NUMA_TOPOLOGY as u64, "NUMA_TOPOLOGY", v(3, 2)),
    item(HEADER_BRANCH_STACK as u64, "BRANCH_STACK", v(3, 4)),
    item(HEADER_PMU_MAPPINGS as u64, "PMU_MAPPINGS", v(3, 7)),
    item(HEADER_GROUP_DESC as u64, "GROUP_DESC", v(3, 8)),
    item(HEADER_AUXTRACE as u64, "AUXTRACE", v(4, 1)),
    item(HEADER_STAT as u64, "STAT", v(4, 4)),
    item(HEADER_CACHE as u64, "CACHE", v(4, 6)),
    item(HEADER_SAMPLE_TIME as u64, "SAMPLE_TIME", v(4, 16)),
    item(HEADER_MEM_TOPOLOGY as u64, "MEM_TOPOLOGY", v(4, 17)),
    item(HEADER_CLOCKID as u64, "CLOCKID", v(5, 0)),
    item(HEADER_DIR_FORMAT as u64, "DIR_FORMAT", v(5, 1)),
    item(HEADER_BPF_PROG_INFO as u64, "BPF_PROG_INFO", v(5, 1)),
    item(HEADER_BPF_BTF as u64, "BPF_BTF", v(5, 1)),
    item(HEADER_COMPRESSED as u64, "COMPRESSED", v(5, 2)),
    item(HEADER_CPU_PMU_CAPS as u64, "CPU_PMU_CAPS", v(5, 4)),
    item(HEADER_CLOCK_DATA as u64, "CLOCK_DATA", v(5, 10)),
    item(HEADER_HYBRID_TOPOLOGY as u64, "HYBRID_TOPOLOGY", v(5, 14)),
    item(HEADER_PMU_CAPS as u64, "PMU_CAPS", v(5, 14)),
    item(HEADER_CPU_DOMAIN_INFO as u64, "CPU_DOMAIN_INFO", v(6, 19)),
    item(HEADER_E_MACHINE as u64, "E_MACHINE", v(6, 19)),
    item(HEADER_CLN_SIZE as u64, "CLN_SIZE", v(6, 19)),
];

/// The entry of `table` whose value is `value` (a flag mask, a sample bit, a type or feature number), e.g. to
/// say which kernel first had a flag: `find(ATTR_FLAGS, ATTR_FLAG_MMAP2).unwrap().since` is 3.16.
pub fn find(table: &[AbiItem], value: u64) -> Option<&AbiItem> {
    table.iter().find(|i| i.value == value)
}

/// The name of a kernel or user record type, if known.
pub fn record_type_name(ty: u32) -> Option<&'static str> {
    RECORD_TYPES
        .iter()
        .chain(USER_RECORD_TYPES)
        .find(|i| i.value == u64::from(ty))
        .map(|i| i.name)
}

/// The name of a header feature id, if known.
pub fn feature_name(id: u32) -> Option<&'static str> {
    HEADER_FEATURES
        .iter()
        .find(|i| i.value == u64::from(id))
        .map(|i| i.name)
}

/// Names of the bits set in `bits` according to `table` (for dumps); unknown bits as `0x…`.
pub fn bit_names(table: &[AbiItem], bits: u64) -> String {
    let mut out = Vec::new();
    let mut rest = bits;
    for i in table {
        if bits & i.value != 0 {
            out.push(i.name.to_string());
            rest &= !i.value;
        }
    }
    if rest != 0 {
        out.push(format!("{rest:#x}"));
    }
    out.join("|")
}

/// Tracepoints bport's commands attach to, by the kernel that added them (the value is unused).
pub const TRACEPOINTS: &[AbiItem] = &[
    // Commit 16edd9b511a1, "locking: Add lock contention tracepoints", merged for v5.19.
    item(0, "lock:contention_begin", v(5, 19)),
    item(0, "lock:contention_end", v(5, 19)),
];
