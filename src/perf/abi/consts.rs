//! Raw numbers of the perf ABI (include/uapi/linux/perf_event.h, tools/perf/util/{event.h,header.h}), as `pub
//! const`s so every module spells them one way. When each appeared is in [`super::table`], not here.

// ---- perf_event_attr sizes (uapi PERF_ATTR_SIZE_VER*) ----

/// `sizeof` the first published `perf_event_attr` (2.6.31).
pub const PERF_ATTR_SIZE_VER0: u32 = 64;
/// Adds `config2` (`bp_len`).
pub const PERF_ATTR_SIZE_VER1: u32 = 72;
/// Adds `branch_sample_type`.
pub const PERF_ATTR_SIZE_VER2: u32 = 80;
/// Adds `sample_regs_user`, `sample_stack_user` (and later `clockid` in the tail).
pub const PERF_ATTR_SIZE_VER3: u32 = 96;
/// Adds `sample_regs_intr`.
pub const PERF_ATTR_SIZE_VER4: u32 = 104;
/// Adds `aux_watermark` (and later `sample_max_stack` in the tail).
pub const PERF_ATTR_SIZE_VER5: u32 = 112;
/// Adds `aux_sample_size`.
pub const PERF_ATTR_SIZE_VER6: u32 = 120;
/// Adds `sig_data`.
pub const PERF_ATTR_SIZE_VER7: u32 = 128;
/// Adds `config3`.
pub const PERF_ATTR_SIZE_VER8: u32 = 136;
/// The largest attr layout bport knows field by field.
pub const PERF_ATTR_SIZE_NEWEST: u32 = PERF_ATTR_SIZE_VER8;

// ---- perf_event_attr.type ----

/// `PERF_TYPE_HARDWARE`.
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_TRACEPOINT`.
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `PERF_TYPE_HW_CACHE`.
pub const PERF_TYPE_HW_CACHE: u32 = 3;
/// `PERF_TYPE_RAW`.
pub const PERF_TYPE_RAW: u32 = 4;
/// `PERF_TYPE_BREAKPOINT`.
pub const PERF_TYPE_BREAKPOINT: u32 = 5;

/// `PERF_COUNT_HW_CPU_CYCLES`.
pub const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
/// `PERF_COUNT_HW_INSTRUCTIONS`.
pub const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
/// `PERF_COUNT_SW_CPU_CLOCK`.
pub const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
/// `PERF_COUNT_SW_TASK_CLOCK`.
pub const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
/// `PERF_COUNT_SW_DUMMY`.
pub const PERF_COUNT_SW_DUMMY: u64 = 9;

// ---- perf_event_attr flag bits (the bitfield word at offset 40) ----

/// `disabled`.
pub const ATTR_FLAG_DISABLED: u64 = 1 << 0;
/// `inherit`.
pub const ATTR_FLAG_INHERIT: u64 = 1 << 1;
/// `pinned`.
pub const ATTR_FLAG_PINNED: u64 = 1 << 2;
/// `exclusive`.
pub const ATTR_FLAG_EXCLUSIVE: u64 = 1 << 3;
/// `exclude_user`.
pub const ATTR_FLAG_EXCLUDE_USER: u64 = 1 << 4;
/// `exclude_kernel`.
pub const ATTR_FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
/// `exclude_hv`.
pub const ATTR_FLAG_EXCLUDE_HV: u64 = 1 << 6;
/// `exclude_idle`.
pub const ATTR_FLAG_EXCLUDE_IDLE: u64 = 1 << 7;
/// `mmap`.
pub const ATTR_FLAG_MMAP: u64 = 1 << 8;
/// `comm`.
pub const ATTR_FLAG_COMM: u64 = 1 << 9;
/// `freq`: `sample_period` holds `sample_freq`.
pub const ATTR_FLAG_FREQ: u64 = 1 << 10;
/// `inherit_stat`.
pub const ATTR_FLAG_INHERIT_STAT: u64 = 1 << 11;
/// `enable_on_exec`.
pub const ATTR_FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;
/// `task`.
pub const ATTR_FLAG_TASK: u64 = 1 << 13;
/// `watermark`.
pub const ATTR_FLAG_WATERMARK: u64 = 1 << 14;
/// Shift of the two-bit `precise_ip` field.
pub const ATTR_PRECISE_IP_SHIFT: u32 = 15;
/// Mask of the two-bit `precise_ip` field.
pub const ATTR_PRECISE_IP_MASK: u64 = 3 << ATTR_PRECISE_IP_SHIFT;
/// `mmap_data`.
pub const ATTR_FLAG_MMAP_DATA: u64 = 1 << 17;
/// `sample_id_all`: non-sample records carry a `sample_id` trailer.
pub const ATTR_FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
/// `exclude_host`.
pub const ATTR_FLAG_EXCLUDE_HOST: u64 = 1 << 19;
/// `exclude_guest`.
pub const ATTR_FLAG_EXCLUDE_GUEST: u64 = 1 << 20;
/// `exclude_callchain_kernel`.
pub const ATTR_FLAG_EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
/// `exclude_callchain_user`.
pub const ATTR_FLAG_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
/// `mmap2`.
pub const ATTR_FLAG_MMAP2: u64 = 1 << 23;
/// `comm_exec`.
pub const ATTR_FLAG_COMM_EXEC: u64 = 1 << 24;
/// `use_clockid`.
pub const ATTR_FLAG_USE_CLOCKID: u64 = 1 << 25;
/// `context_switch`.
pub const ATTR_FLAG_CONTEXT_SWITCH: u64 = 1 << 26;
/// `write_backward`.
pub const ATTR_FLAG_WRITE_BACKWARD: u64 = 1 << 27;
/// `namespaces`.
pub const ATTR_FLAG_NAMESPACES: u64 = 1 << 28;
/// `ksymbol`.
pub const ATTR_FLAG_KSYMBOL: u64 = 1 << 29;
/// `bpf_event`.
pub const ATTR_FLAG_BPF_EVENT: u64 = 1 << 30;
/// `aux_output`.
pub const ATTR_FLAG_AUX_OUTPUT: u64 = 1 << 31;
/// `cgroup`.
pub const ATTR_FLAG_CGROUP: u64 = 1 << 32;
/// `text_poke`.
pub const ATTR_FLAG_TEXT_POKE: u64 = 1 << 33;
/// `build_id`: MMAP2 carries build-ids.
pub const ATTR_FLAG_BUILD_ID: u64 = 1 << 34;
/// `inherit_thread`.
pub const ATTR_FLAG_INHERIT_THREAD: u64 = 1 << 35;
/// `remove_on_exec`.
pub const ATTR_FLAG_REMOVE_ON_EXEC: u64 = 1 << 36;
/// `sigtrap`.
pub const ATTR_FLAG_SIGTRAP: u64 = 1 << 37;
/// `defer_callchain` (deferred user callchains).
pub const ATTR_FLAG_DEFER_CALLCHAIN: u64 = 1 << 38;

// ---- PERF_SAMPLE_* ----

/// `PERF_SAMPLE_IP`.
pub const PERF_SAMPLE_IP: u64 = 1 << 0;
/// `PERF_SAMPLE_TID`.
pub const PERF_SAMPLE_TID: u64 = 1 << 1;
/// `PERF_SAMPLE_TIME`.
pub const PERF_SAMPLE_TIME: u64 = 1 << 2;
/// `PERF_SAMPLE_ADDR`.
pub const PERF_SAMPLE_ADDR: u64 = 1 << 3;
/// `PERF_SAMPLE_READ`.
pub const PERF_SAMPLE_READ: u64 = 1 << 4;
/// `PERF_SAMPLE_CALLCHAIN`.
pub const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
/// `PERF_SAMPLE_ID`.
pub const PERF_SAMPLE_ID: u64 = 1 << 6;
/// `PERF_SAMPLE_CPU`.
pub const PERF_SAMPLE_CPU: u64 = 1 << 7;
/// `PERF_SAMPLE_PERIOD`.
pub const PERF_SAMPLE_PERIOD: u64 = 1 << 8;
/// `PERF_SAMPLE_STREAM_ID`.
pub const PERF_SAMPLE_STREAM_ID: u64 = 1 << 9;
/// `PERF_SAMPLE_RAW`.
pub const PERF_SAMPLE_RAW: u64 = 1 << 10;
/// `PERF_SAMPLE_BRANCH_STACK`.
pub const PERF_SAMPLE_BRANCH_STACK: u64 = 1 << 11;
/// `PERF_SAMPLE_REGS_USER`.
pub const PERF_SAMPLE_REGS_USER: u64 = 1 << 12;
/// `PERF_SAMPLE_STACK_USER`.
pub const PERF_SAMPLE_STACK_USER: u64 = 1 << 13;
/// `PERF_SAMPLE_WEIGHT`.
pub const PERF_SAMPLE_WEIGHT: u64 = 1 << 14;
/// `PERF_SAMPLE_DATA_SRC`.
pub const PERF_SAMPLE_DATA_SRC: u64 = 1 << 15;
/// `PERF_SAMPLE_IDENTIFIER`: the id first in samples and last in `sample_id` trailers.
pub const PERF_SAMPLE_IDENTIFIER: u64 = 1 << 16;
/// `PERF_SAMPLE_TRANSACTION`.
pub const PERF_SAMPLE_TRANSACTION: u64 = 1 << 17;
/// `PERF_SAMPLE_REGS_INTR`.
pub const PERF_SAMPLE_REGS_INTR: u64 = 1 << 18;
/// `PERF_SAMPLE_PHYS_ADDR`.
pub const PERF_SAMPLE_PHYS_ADDR: u64 = 1 << 19;
/// `PERF_SAMPLE_AUX`.
pub const PERF_SAMPLE_AUX: u64 = 1 << 20;
/// `PERF_SAMPLE_CGROUP`.
pub const PERF_SAMPLE_CGROUP: u64 = 1 << 21;
/// `PERF_SAMPLE_DATA_PAGE_SIZE`.
pub const PERF_SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
/// `PERF_SAMPLE_CODE_PAGE_SIZE`.
pub const PERF_SAMPLE_CODE_PAGE_SIZE: u64 = 1 << 23;
/// `PERF_SAMPLE_WEIGHT_STRUCT`.
pub const PERF_SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;

// ---- union perf_mem_data_src (PERF_SAMPLE_DATA_SRC), little-endian bit-field layout ----

/// Shift of `mem_op` (`PERF_MEM_OP_*`).
pub const PERF_MEM_OP_SHIFT: u32 = 0;
/// Width in bits of `mem_op`.
pub const PERF_MEM_OP_BITS: u32 = 5;
/// Shift of `mem_lvl` (`PERF_MEM_LVL_*`).
pub const PERF_MEM_LVL_SHIFT: u32 = 5;
/// Width in bits of `mem_lvl`.
pub const PERF_MEM_LVL_BITS: u32 = 14;
/// Shift of `mem_snoop` (`PERF_MEM_SNOOP_*`).
pub const PERF_MEM_SNOOP_SHIFT: u32 = 19;
/// Width in bits of `mem_snoop`.
pub const PERF_MEM_SNOOP_BITS: u32 = 5;
/// Shift of `mem_lock` (`PERF_MEM_LOCK_*`).
pub const PERF_MEM_LOCK_SHIFT: u32 = 24;
/// Width in bits of `mem_lock`.
pub const PERF_MEM_LOCK_BITS: u32 = 2;
/// Shift of `mem_dtlb` (`PERF_MEM_TLB_*`).
pub const PERF_MEM_TLB_SHIFT: u32 = 26;
/// Width in bits of `mem_dtlb`.
pub const PERF_MEM_TLB_BITS: u32 = 7;
/// Shift of `mem_lvl_num` (`PERF_MEM_LVLNUM_*`).
pub const PERF_MEM_LVLNUM_SHIFT: u32 = 33;
/// Width in bits of `mem_lvl_num`.
pub const PERF_MEM_LVLNUM_BITS: u32 = 4;
/// Shift of `mem_remote`.
pub const PERF_MEM_REMOTE_SHIFT: u32 = 37;
/// Width in bits of `mem_remote`.
pub const PERF_MEM_REMOTE_BITS: u32 = 1;
/// Shift of `mem_snoopx` (`PERF_MEM_SNOOPX_*`).
pub const PERF_MEM_SNOOPX_SHIFT: u32 = 38;
/// Width in bits of `mem_snoopx`.
pub const PERF_MEM_SNOOPX_BITS: u32 = 2;
/// Shift of `mem_blk` (`PERF_MEM_BLK_*`).
pub const PERF_MEM_BLK_SHIFT: u32 = 40;
/// Width in bits of `mem_blk`.
pub const PERF_MEM_BLK_BITS: u32 = 3;
/// Shift of `mem_hops` (`PERF_MEM_HOPS_*`).
pub const PERF_MEM_HOPS_SHIFT: u32 = 43;
/// Width in bits of `mem_hops`.
pub const PERF_MEM_HOPS_BITS: u32 = 3;
/// `PERF_MEM_LVL_HIT`.
pub const PERF_MEM_LVL_HIT: u64 = 0x02;
/// `PERF_MEM_LVL_MISS`.
pub const PERF_MEM_LVL_MISS: u64 = 0x04;
/// `PERF_MEM_TLB_HIT`.
pub const PERF_MEM_TLB_HIT: u64 = 0x02;
/// `PERF_MEM_TLB_MISS`.
pub const PERF_MEM_TLB_MISS: u64 = 0x04;
/// `PERF_MEM_LOCK_NA`.
pub const PERF_MEM_LOCK_NA: u64 = 0x01;
/// `PERF_MEM_LOCK_LOCKED`.
pub const PERF_MEM_LOCK_LOCKED: u64 = 0x02;
/// `PERF_MEM_BLK_NA`.
pub const PERF_MEM_BLK_NA: u64 = 0x01;
/// `PERF_MEM_BLK_DATA`.
pub const PERF_MEM_BLK_DATA: u64 = 0x02;
/// `PERF_MEM_BLK_ADDR`.
pub const PERF_MEM_BLK_ADDR: u64 = 0x04;

// ---- read_format ----

/// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
pub const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
/// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
pub const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
/// `PERF_FORMAT_ID`.
pub const PERF_FORMAT_ID: u64 = 1 << 2;
/// `PERF_FORMAT_GROUP`.
pub const PERF_FORMAT_GROUP: u64 = 1 << 3;
/// `PERF_FORMAT_LOST`.
pub const PERF_FORMAT_LOST: u64 = 1 << 4;

// ---- branch_sample_type ----

/// `PERF_SAMPLE_BRANCH_USER`.
pub const PERF_SAMPLE_BRANCH_USER: u64 = 1 << 0;
/// `PERF_SAMPLE_BRANCH_KERNEL`.
pub const PERF_SAMPLE_BRANCH_KERNEL: u64 = 1 << 1;
/// `PERF_SAMPLE_BRANCH_HV`.
pub const PERF_SAMPLE_BRANCH_HV: u64 = 1 << 2;
/// `PERF_SAMPLE_BRANCH_ANY`.
pub const PERF_SAMPLE_BRANCH_ANY: u64 = 1 << 3;
/// `PERF_SAMPLE_BRANCH_ANY_CALL`.
pub const PERF_SAMPLE_BRANCH_ANY_CALL: u64 = 1 << 4;
/// `PERF_SAMPLE_BRANCH_ANY_RETURN`.
pub const PERF_SAMPLE_BRANCH_ANY_RETURN: u64 = 1 << 5;
/// `PERF_SAMPLE_BRANCH_IND_CALL`.
pub const PERF_SAMPLE_BRANCH_IND_CALL: u64 = 1 << 6;
/// `PERF_SAMPLE_BRANCH_ABORT_TX`.
pub const PERF_SAMPLE_BRANCH_ABORT_TX: u64 = 1 << 7;
/// `PERF_SAMPLE_BRANCH_IN_TX`.
pub const PERF_SAMPLE_BRANCH_IN_TX: u64 = 1 << 8;
/// `PERF_SAMPLE_BRANCH_NO_TX`.
pub const PERF_SAMPLE_BRANCH_NO_TX: u64 = 1 << 9;
/// `PERF_SAMPLE_BRANCH_COND`.
pub const PERF_SAMPLE_BRANCH_COND: u64 = 1 << 10;
/// `PERF_SAMPLE_BRANCH_CALL_STACK`: LBR call-stack mode.
pub const PERF_SAMPLE_BRANCH_CALL_STACK: u64 = 1 << 11;
/// `PERF_SAMPLE_BRANCH_IND_JUMP`.
pub const PERF_SAMPLE_BRANCH_IND_JUMP: u64 = 1 << 12;
/// `PERF_SAMPLE_BRANCH_CALL`.
pub const PERF_SAMPLE_BRANCH_CALL: u64 = 1 << 13;
/// `PERF_SAMPLE_BRANCH_NO_FLAGS`.
pub const PERF_SAMPLE_BRANCH_NO_FLAGS: u64 = 1 << 14;
/// `PERF_SAMPLE_BRANCH_NO_CYCLES`.
pub const PERF_SAMPLE_BRANCH_NO_CYCLES: u64 = 1 << 15;
/// `PERF_SAMPLE_BRANCH_TYPE_SAVE`.
pub const PERF_SAMPLE_BRANCH_TYPE_SAVE: u64 = 1 << 16;
/// `PERF_SAMPLE_BRANCH_HW_INDEX`: a `hw_idx` u64 precedes the branch entries.
pub const PERF_SAMPLE_BRANCH_HW_INDEX: u64 = 1 << 17;
/// `PERF_SAMPLE_BRANCH_PRIV_SAVE`.
pub const PERF_SAMPLE_BRANCH_PRIV_SAVE: u64 = 1 << 18;
/// `PERF_SAMPLE_BRANCH_COUNTERS`: `nr` u64 counters follow the branch entries.
pub const PERF_SAMPLE_BRANCH_COUNTERS: u64 = 1 << 19;

// ---- PERF_RECORD_* (kernel) ----

/// `PERF_RECORD_MMAP`.
pub const PERF_RECORD_MMAP: u32 = 1;
/// `PERF_RECORD_LOST`.
pub const PERF_RECORD_LOST: u32 = 2;
/// `PERF_RECORD_COMM`.
pub const PERF_RECORD_COMM: u32 = 3;
/// `PERF_RECORD_EXIT`.
pub const PERF_RECORD_EXIT: u32 = 4;
/// `PERF_RECORD_THROTTLE`.
pub const PERF_RECORD_THROTTLE: u32 = 5;
/// `PERF_RECORD_UNTHROTTLE`.
pub const PERF_RECORD_UNTHROTTLE: u32 = 6;
/// `PERF_RECORD_FORK`.
pub const PERF_RECORD_FORK: u32 = 7;
/// `PERF_RECORD_READ`.
pub const PERF_RECORD_READ: u32 = 8;
/// `PERF_RECORD_SAMPLE`.
pub const PERF_RECORD_SAMPLE: u32 = 9;
/// `PERF_RECORD_MMAP2`.
pub const PERF_RECORD_MMAP2: u32 = 10;
/// `PERF_RECORD_AUX`.
pub const PERF_RECORD_AUX: u32 = 11;
/// `PERF_RECORD_ITRACE_START`.
pub const PERF_RECORD_ITRACE_START: u32 = 12;
/// `PERF_RECORD_LOST_SAMPLES`.
pub const PERF_RECORD_LOST_SAMPLES: u32 = 13;
/// `PERF_RECORD_SWITCH`.
pub const PERF_RECORD_SWITCH: u32 = 14;
/// `PERF_RECORD_SWITCH_CPU_WIDE`.
pub const PERF_RECORD_SWITCH_CPU_WIDE: u32 = 15;
/// `PERF_RECORD_NAMESPACES`.
pub const PERF_RECORD_NAMESPACES: u32 = 16;
/// `PERF_RECORD_KSYMBOL`.
pub const PERF_RECORD_KSYMBOL: u32 = 17;
/// `PERF_RECORD_BPF_EVENT`.
pub const PERF_RECORD_BPF_EVENT: u32 = 18;
/// `PERF_RECORD_CGROUP`.
pub const PERF_RECORD_CGROUP: u32 = 19;
/// `PERF_RECORD_TEXT_POKE`.
pub const PERF_RECORD_TEXT_POKE: u32 = 20;
/// `PERF_RECORD_AUX_OUTPUT_HW_ID`.
pub const PERF_RECORD_AUX_OUTPUT_HW_ID: u32 = 21;
/// `PERF_RECORD_CALLCHAIN_DEFERRED`.
pub const PERF_RECORD_CALLCHAIN_DEFERRED: u32 = 22;

// ---- user (synthesized) record types, tools/perf/util/event.h ----

/// First type number perf uses for records it synthesizes itself.
pub const PERF_RECORD_USER_TYPE_START: u32 = 64;
/// `PERF_RECORD_HEADER_ATTR` (pipe mode).
pub const PERF_RECORD_HEADER_ATTR: u32 = 64;
/// `PERF_RECORD_HEADER_EVENT_TYPE` (deprecated).
pub const PERF_RECORD_HEADER_EVENT_TYPE: u32 = 65;
/// `PERF_RECORD_HEADER_TRACING_DATA` (pipe mode; the tracing data follows the record).
pub const PERF_RECORD_HEADER_TRACING_DATA: u32 = 66;
/// `PERF_RECORD_HEADER_BUILD_ID` (pipe mode).
pub const PERF_RECORD_HEADER_BUILD_ID: u32 = 67;
/// `PERF_RECORD_FINISHED_ROUND`.
pub const PERF_RECORD_FINISHED_ROUND: u32 = 68;
/// `PERF_RECORD_ID_INDEX`.
pub const PERF_RECORD_ID_INDEX: u32 = 69;
/// `PERF_RECORD_AUXTRACE_INFO`.
pub const PERF_RECORD_AUXTRACE_INFO: u32 = 70;
/// `PERF_RECORD_AUXTRACE` (the trace data follows the record).
pub const PERF_RECORD_AUXTRACE: u32 = 71;
/// `PERF_RECORD_AUXTRACE_ERROR`.
pub const PERF_RECORD_AUXTRACE_ERROR: u32 = 72;
/// `PERF_RECORD_THREAD_MAP`.
pub const PERF_RECORD_THREAD_MAP: u32 = 73;
/// `PERF_RECORD_CPU_MAP`.
pub const PERF_RECORD_CPU_MAP: u32 = 74;
/// `PERF_RECORD_STAT_CONFIG`.
pub const PERF_RECORD_STAT_CONFIG: u32 = 75;
/// `PERF_RECORD_STAT`.
pub const PERF_RECORD_STAT: u32 = 76;
/// `PERF_RECORD_STAT_ROUND`.
pub const PERF_RECORD_STAT_ROUND: u32 = 77;
/// `PERF_RECORD_EVENT_UPDATE`.
pub const PERF_RECORD_EVENT_UPDATE: u32 = 78;
/// `PERF_RECORD_TIME_CONV`.
pub const PERF_RECORD_TIME_CONV: u32 = 79;
/// `PERF_RECORD_HEADER_FEATURE` (pipe mode).
pub const PERF_RECORD_HEADER_FEATURE: u32 = 80;
/// `PERF_RECORD_COMPRESSED` (zstd).
pub const PERF_RECORD_COMPRESSED: u32 = 81;
/// `PERF_RECORD_FINISHED_INIT`.
pub const PERF_RECORD_FINISHED_INIT: u32 = 82;
/// `PERF_RECORD_COMPRESSED2`.
pub const PERF_RECORD_COMPRESSED2: u32 = 83;
/// `PERF_RECORD_BPF_METADATA`.
pub const PERF_RECORD_BPF_METADATA: u32 = 84;
/// `PERF_RECORD_SCHEDSTAT_CPU`.
pub const PERF_RECORD_SCHEDSTAT_CPU: u32 = 85;
/// `PERF_RECORD_SCHEDSTAT_DOMAIN`.
pub const PERF_RECORD_SCHEDSTAT_DOMAIN: u32 = 86;

// ---- header.misc ----

/// Mask of the cpumode bits of `misc`.
pub const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
/// cpumode: unknown.
pub const PERF_RECORD_MISC_CPUMODE_UNKNOWN: u16 = 0;
/// cpumode: kernel.
pub const PERF_RECORD_MISC_KERNEL: u16 = 1;
/// cpumode: user.
pub const PERF_RECORD_MISC_USER: u16 = 2;
/// cpumode: hypervisor.
pub const PERF_RECORD_MISC_HYPERVISOR: u16 = 3;
/// cpumode: guest kernel.
pub const PERF_RECORD_MISC_GUEST_KERNEL: u16 = 4;
/// cpumode: guest user.
pub const PERF_RECORD_MISC_GUEST_USER: u16 = 5;
/// Synthesized MMAP: /proc/PID/maps parsing timed out.
pub const PERF_RECORD_MISC_PROC_MAP_PARSE_TIMEOUT: u16 = 1 << 12;
/// MMAP/MMAP2 of a data (non-exec) mapping.
pub const PERF_RECORD_MISC_MMAP_DATA: u16 = 1 << 13;
/// COMM caused by exec.
pub const PERF_RECORD_MISC_COMM_EXEC: u16 = 1 << 13;
/// SWITCH: switch out.
pub const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
/// SAMPLE: the IP is exact (PEBS).
pub const PERF_RECORD_MISC_EXACT_IP: u16 = 1 << 14;
/// MMAP2 carries a build-id instead of maj/min/ino/ino_generation.
pub const PERF_RECORD_MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// Build-id feature entries: the build-id size is stored (not assumed 20).
pub const PERF_RECORD_MISC_BUILD_ID_SIZE: u16 = 1 << 15;

// ---- callchain context markers ----

/// Callchain marker: hypervisor frames follow.
pub const PERF_CONTEXT_HV: u64 = -32i64 as u64;
/// Callchain marker: kernel frames follow.
pub const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
/// Callchain marker: user frames follow.
pub const PERF_CONTEXT_USER: u64 = -512i64 as u64;
/// Callchain marker: deferred user callchain cookie follows.
pub const PERF_CONTEXT_USER_DEFERRED: u64 = -640i64 as u64;
/// Callchain marker: guest frames follow.
pub const PERF_CONTEXT_GUEST: u64 = -2048i64 as u64;
/// Callchain marker: guest kernel frames follow.
pub const PERF_CONTEXT_GUEST_KERNEL: u64 = -2176i64 as u64;
/// Callchain marker: guest user frames follow.
pub const PERF_CONTEXT_GUEST_USER: u64 = -2560i64 as u64;
/// Every value at or above this is a context marker, not an address.
pub const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
/// Callchain depth limit of the kernel's default `perf_event_max_stack`.
pub const PERF_MAX_STACK_DEPTH: u32 = 127;

// ---- sample_regs_* ABI and x86 register indices (arch/x86/include/uapi/asm/perf_regs.h) ----

/// `PERF_SAMPLE_REGS_ABI_NONE`: no registers in this sample.
pub const PERF_SAMPLE_REGS_ABI_NONE: u64 = 0;
/// `PERF_SAMPLE_REGS_ABI_32`.
pub const PERF_SAMPLE_REGS_ABI_32: u64 = 1;
/// `PERF_SAMPLE_REGS_ABI_64`.
pub const PERF_SAMPLE_REGS_ABI_64: u64 = 2;

/// x86 register index: ax.
pub const PERF_REG_X86_AX: u32 = 0;
/// x86 register index: bx.
pub const PERF_REG_X86_BX: u32 = 1;
/// x86 register index: cx.
pub const PERF_REG_X86_CX: u32 = 2;
/// x86 register index: dx.
pub const PERF_REG_X86_DX: u32 = 3;
/// x86 register index: si.
pub const PERF_REG_X86_SI: u32 = 4;
/// x86 register index: di.
pub const PERF_REG_X86_DI: u32 = 5;
/// x86 register index: bp.
pub const PERF_REG_X86_BP: u32 = 6;
/// x86 register index: sp.
pub const PERF_REG_X86_SP: u32 = 7;
/// x86 register index: ip.
pub const PERF_REG_X86_IP: u32 = 8;
/// x86 register index: flags.
pub const PERF_REG_X86_FLAGS: u32 = 9;
/// x86 register index: cs.
pub const PERF_REG_X86_CS: u32 = 10;
/// x86 register index: ss.
pub const PERF_REG_X86_SS: u32 = 11;
/// x86 register index: ds.
pub const PERF_REG_X86_DS: u32 = 12;
/// x86 register index: es.
pub const PERF_REG_X86_ES: u32 = 13;
/// x86 register index: fs.
pub const PERF_REG_X86_FS: u32 = 14;
/// x86 register index: gs.
pub const PERF_REG_X86_GS: u32 = 15;
/// x86 register index: r8 (first of r8–r15, indices 16–23).
pub const PERF_REG_X86_R8: u32 = 16;
/// x86 register index: r15.
pub const PERF_REG_X86_R15: u32 = 23;
/// Number of x86-64 general registers (`PERF_REG_X86_64_MAX`).
pub const PERF_REG_X86_64_MAX: u32 = 24;
/// Number of x86-32 registers (`PERF_REG_X86_32_MAX`).
pub const PERF_REG_X86_32_MAX: u32 = 16;

// ---- header feature ids (tools/perf/util/header.h) ----

/// `HEADER_RESERVED`.
pub const HEADER_RESERVED: u32 = 0;
/// `HEADER_TRACING_DATA`.
pub const HEADER_TRACING_DATA: u32 = 1;
/// `HEADER_BUILD_ID`.
pub const HEADER_BUILD_ID: u32 = 2;
/// `HEADER_HOSTNAME`.
pub const HEADER_HOSTNAME: u32 = 3;
/// `HEADER_OSRELEASE`.
pub const HEADER_OSRELEASE: u32 = 4;
/// `HEADER_VERSION`.
pub const HEADER_VERSION: u32 = 5;
/// `HEADER_ARCH`.
pub const HEADER_ARCH: u32 = 6;
/// `HEADER_NRCPUS`.
pub const HEADER_NRCPUS: u32 = 7;
/// `HEADER_CPUDESC`.
pub const HEADER_CPUDESC: u32 = 8;
/// `HEADER_CPUID`.
pub const HEADER_CPUID: u32 = 9;
/// `HEADER_TOTAL_MEM`.
pub const HEADER_TOTAL_MEM: u32 = 10;
/// `HEADER_CMDLINE`.
pub const HEADER_CMDLINE: u32 = 11;
/// `HEADER_EVENT_DESC`.
pub const HEADER_EVENT_DESC: u32 = 12;
/// `HEADER_CPU_TOPOLOGY`.
pub const HEADER_CPU_TOPOLOGY: u32 = 13;
/// `HEADER_NUMA_TOPOLOGY`.
pub const HEADER_NUMA_TOPOLOGY: u32 = 14;
/// `HEADER_BRANCH_STACK`.
pub const HEADER_BRANCH_STACK: u32 = 15;
/// `HEADER_PMU_MAPPINGS`.
pub const HEADER_PMU_MAPPINGS: u32 = 16;
/// `HEADER_GROUP_DESC`.
pub const HEADER_GROUP_DESC: u32 = 17;
/// `HEADER_AUXTRACE`.
pub const HEADER_AUXTRACE: u32 = 18;
/// `HEADER_STAT`.
pub const HEADER_STAT: u32 = 19;
/// `HEADER_CACHE`.
pub const HEADER_CACHE: u32 = 20;
/// `HEADER_SAMPLE_TIME`.
pub const HEADER_SAMPLE_TIME: u32 = 21;
/// `HEADER_MEM_TOPOLOGY`.
pub const HEADER_MEM_TOPOLOGY: u32 = 22;
/// `HEADER_CLOCKID`.
pub const HEADER_CLOCKID: u32 = 23;
/// `HEADER_DIR_FORMAT`.
pub const HEADER_DIR_FORMAT: u32 = 24;
/// `HEADER_BPF_PROG_INFO`.
pub const HEADER_BPF_PROG_INFO: u32 = 25;
/// `HEADER_BPF_BTF`.
pub const HEADER_BPF_BTF: u32 = 26;
/// `HEADER_COMPRESSED`.
pub const HEADER_COMPRESSED: u32 = 27;
/// `HEADER_CPU_PMU_CAPS`.
pub const HEADER_CPU_PMU_CAPS: u32 = 28;
/// `HEADER_CLOCK_DATA`.
pub const HEADER_CLOCK_DATA: u32 = 29;
/// `HEADER_HYBRID_TOPOLOGY`.
pub const HEADER_HYBRID_TOPOLOGY: u32 = 30;
/// `HEADER_PMU_CAPS` (first named `HEADER_HYBRID_CPU_PMU_CAPS`).
pub const HEADER_PMU_CAPS: u32 = 31;
/// `HEADER_CPU_DOMAIN_INFO`.
pub const HEADER_CPU_DOMAIN_INFO: u32 = 32;
/// `HEADER_E_MACHINE`.
pub const HEADER_E_MACHINE: u32 = 33;
/// `HEADER_CLN_SIZE`.
pub const HEADER_CLN_SIZE: u32 = 34;
/// Number of feature bits in the header bitmap (`HEADER_FEAT_BITS`).
pub const HEADER_FEAT_BITS: u32 = 256;

// ---- file magic ----

/// `PERFILE2` as the writer's native u64; on disk `PERFILE2` from little-endian writers, `2ELIFREP` from big-endian.
pub const PERF_MAGIC2: u64 = 0x3245_4c49_4652_4550;
/// The legacy v1 magic `PERFFILE` (perf before 3.4).
pub const PERF_MAGIC1: u64 = 0x454c_4946_4652_4550;
/// Size of the file-mode header perf writes.
pub const PERF_FILE_HEADER_SIZE: u64 = 104;
/// Size of the pipe-mode header.
pub const PERF_PIPE_HEADER_SIZE: u64 = 16;
