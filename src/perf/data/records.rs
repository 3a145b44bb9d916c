//! Every record type as a borrowed struct (perf_event.h `enum perf_event_type`, tools/perf/util/event.h).
//!
//! Owns: the record types and their accessors. Does not own: their bytes — `codec` parses and encodes
//! them (and [`super::sample`] the sample body), below which this module sits.

use crate::perf::abi::*;
use object::endian::Endianness;

/// A run of u64 values inside the file, in the file's byte order; read one by one without copying.
#[derive(Clone, Copy, Debug, Default)]
pub struct U64s<'a> {
    bytes: &'a [u8],
    endian: Endianness,
}

impl<'a> U64s<'a> {
    /// Values stored in `bytes` (length a multiple of 8; a partial tail is ignored) in byte order `endian`.
    pub fn new(bytes: &'a [u8], endian: Endianness) -> Self {
        U64s {
            bytes: &bytes[..bytes.len() / 8 * 8],
            endian,
        }
    }

    /// Values from a native slice (for building records in code).
    pub fn from_native(values: &'a [u64]) -> Self {
        U64s {
            bytes: object::pod::bytes_of_slice(values),
            endian: Endianness::default(),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Value `i`.
    pub fn get(&self, i: usize) -> Option<u64> {
        super::cursor::u64_at(self.bytes, i.checked_mul(8)?, self.endian)
    }

    /// All values in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        super::cursor::u64s(self.bytes, self.endian)
    }

    /// Copies the values out.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The raw bytes in the file's byte order.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

impl PartialEq for U64s<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}
impl Eq for U64s<'_> {}

/// The `sample_id` fields of a record: from the trailer of non-sample records (`sample_id_all`), or the sample's
/// own fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Process id.
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: Option<u32>,
    /// Timestamp (ns, perf clock).
    pub time: Option<u64>,
    /// Event id (ID or IDENTIFIER).
    pub id: Option<u64>,
    /// Stream id.
    pub stream_id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
}

/// Where a record is and what its header said.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordMeta {
    /// File offset of the record header (in pipe mode: the offset in the stream).
    pub offset: u64,
    /// `header.type`.
    pub ty: u32,
    /// `header.misc`.
    pub misc: u16,
    /// Index into [`super::PerfFile::attrs`] of the event this record belongs to (kernel records only).
    pub attr_index: Option<usize>,
    /// The `sample_id` fields (empty for user records and without `sample_id_all`).
    pub sample_id: SampleId,
}

impl RecordMeta {
    /// `misc & PERF_RECORD_MISC_CPUMODE_MASK`.
    pub fn cpumode(&self) -> u16 {
        self.misc & PERF_RECORD_MISC_CPUMODE_MASK
    }
}

/// A record kept as bytes: user records bport does not interpret, and unknown types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// Header facts.
    pub meta: RecordMeta,
    /// The body after the 8-byte header, in the file's byte order.
    pub body: &'a [u8],
}

/// `PERF_RECORD_SAMPLE`: fields present per the attr's `sample_type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleRecord<'a> {
    /// Header facts; `meta.sample_id` repeats pid/tid/time/id/stream_id/cpu.
    pub meta: RecordMeta,
    /// Index of the attr (event) this sample belongs to.
    pub attr_index: usize,
    /// IDENTIFIER or ID.
    pub id: Option<u64>,
    /// IP.
    pub ip: Option<u64>,
    /// TID: process id.
    pub pid: Option<u32>,
    /// TID: thread id.
    pub tid: Option<u32>,
    /// TIME.
    pub time: Option<u64>,
    /// ADDR.
    pub addr: Option<u64>,
    /// STREAM_ID.
    pub stream_id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
    /// PERIOD.
    pub period: Option<u64>,
    /// READ: the `read_format` values as u64s.
    pub read: Option<U64s<'a>>,
    /// CALLCHAIN: addresses with `PERF_CONTEXT_*` markers.
    pub callchain: Option<U64s<'a>>,
    /// RAW payload (tracepoint data).
    pub raw: Option<&'a [u8]>,
    /// BRANCH_STACK.
    pub branch_stack: Option<BranchStack<'a>>,
    /// REGS_USER.
    pub regs_user: Option<Regs<'a>>,
    /// STACK_USER.
    pub stack_user: Option<StackUser<'a>>,
    /// WEIGHT or WEIGHT_STRUCT (raw u64).
    pub weight: Option<u64>,
    /// DATA_SRC.
    pub data_src: Option<u64>,
    /// TRANSACTION.
    pub transaction: Option<u64>,
    /// REGS_INTR.
    pub regs_intr: Option<Regs<'a>>,
    /// PHYS_ADDR.
    pub phys_addr: Option<u64>,
    /// CGROUP.
    pub cgroup: Option<u64>,
    /// DATA_PAGE_SIZE.
    pub data_page_size: Option<u64>,
    /// CODE_PAGE_SIZE.
    pub code_page_size: Option<u64>,
    /// AUX sample data.
    pub aux: Option<&'a [u8]>,
}

/// A branch stack (LBR): `nr` entries of `{from, to, flags}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BranchStack<'a> {
    /// `hw_idx` with `PERF_SAMPLE_BRANCH_HW_INDEX`.
    pub hw_idx: Option<u64>,
    /// `3 * nr` u64s.
    pub entries: U64s<'a>,
    /// `nr` counters with `PERF_SAMPLE_BRANCH_COUNTERS`.
    pub counters: Option<U64s<'a>>,
}

/// One branch: source, target and the flags word (mispred, predicted, in_tx, abort, cycles, type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchEntry {
    /// Branch source.
    pub from: u64,
    /// Branch target.
    pub to: u64,
    /// Flags bitfield word.
    pub flags: u64,
}

impl BranchStack<'_> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() / 3
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entry `i` (0 = most recent).
    pub fn get(&self, i: usize) -> Option<BranchEntry> {
        Some(BranchEntry {
            from: self.entries.get(3 * i)?,
            to: self.entries.get(3 * i + 1)?,
            flags: self.entries.get(3 * i + 2)?,
        })
    }

    /// All entries.
    pub fn iter(&self) -> impl Iterator<Item = BranchEntry> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// Sampled registers: the ABI word, the attr's mask and one value per set mask bit (lowest bit first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs<'a> {
    /// `PERF_SAMPLE_REGS_ABI_*`; with NONE there are no values.
    pub abi: u64,
    /// The attr's `sample_regs_user`/`sample_regs_intr`.
    pub mask: u64,
    /// The values.
    pub values: U64s<'a>,
}

impl Regs<'_> {
    /// The value of register index `reg` (e.g. `PERF_REG_X86_SP`), if it was sampled.
    pub fn get(&self, reg: u32) -> Option<u64> {
        if reg >= 64 || self.mask & (1 << reg) == 0 {
            return None;
        }
        let pos = (self.mask & ((1u64 << reg) - 1)).count_ones() as usize;
        self.values.get(pos)
    }
}

/// A user stack snapshot: `size` bytes copied from the stack pointer up, of which `dyn_size` are valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackUser<'a> {
    /// All bytes the kernel reserved (`size`).
    pub data: &'a [u8],
    /// How many of them are real stack (`dyn_size`).
    pub dyn_size: u64,
}

impl<'a> StackUser<'a> {
    /// The valid part of the snapshot.
    pub fn valid(&self) -> &'a [u8] {
        let n = usize::try_from(self.dyn_size)
            .unwrap_or(usize::MAX)
            .min(self.data.len());
        &self.data[..n]
    }
}

/// `PERF_RECORD_MMAP`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmapRecord<'a> {
    /// Header facts.
    pub meta: RecordMeta,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset of the mapping.
    pub pgoff: u64,
    /// File name (without the NUL).
    pub filename: &'a [u8],
}

/// What MMAP2 says about the file: inode facts, or (with `PERF_RECORD_MISC_MMAP_BUILD_ID`) its build-id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mmap2Inode<'a> {
    /// Device and inode.
    Inode {
        /// Device major.
        maj: u32,
        /// Device minor.
        min: u32,
        /// Inode.
        ino: u64,
        /// Inode generation.
        ino_generation: u64,
    },
    /// Build-id (up to 20 bytes).
    BuildId(&'a [u8]),
}

impl Default for Mmap2Inode<'_> {
    fn default() -> Self {
        Mmap2Inode::Inode {
            maj: 0,
            min: 0,
            ino: 0,
            ino_generation: 0,
        }
    }
}

/// `PERF_RECORD_MMAP2`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mmap2Record<'a> {
    /// Header facts.
    pub meta: RecordMeta,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset of the mapping.
    pub pgoff: u64,
    /// Inode or build-id.
    pub inode: Mmap2Inode<'a>,
    /// `PROT_*`.
    pub prot: u32,
    /// `MAP_*`.
    pub flags: u32,
    /// File name (without the NUL).
    pub filename: &'a [u8],
}

/// `PERF_RECORD_COMM`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommRecord<'a> {
    /// Header facts (`misc & PERF_RECORD_MISC_COMM_EXEC` for exec).
    pub meta: RecordMeta,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Command name (without the NUL).
    pub comm: &'a [u8],
}

/// `PERF_RECORD_FORK` and `PERF_RECORD_EXIT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForkRecord {
    /// Header facts.
    pub meta: RecordMeta,
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Thread id.
    pub tid: u32,
    /// Parent thread id.
    pub ptid: u32,
    /// Timestamp.
    pub time: u64,
}

/// `PERF_RECORD_LOST`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LostRecord {
    /// Header facts.
    pub meta: RecordMeta,
    /// Event id.
    pub id: u64,
    /// Number of records lost.
    pub lost: u64,
}

/// `PERF_RECORD_THROTTLE` / `PERF_RECORD_UNTHROTTLE`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThrottleRecord {
    /// Header facts.
    pub meta: RecordMeta,
    /// Timestamp.
    pub time: u64,
    /// Event id.
    pub id: u64,
    /// Stream id.
    pub stream_id: u64,
}

/// A record with a few fixed u32/u64 fields and no strings: LOST_SAMPLES, ITRACE_START, SWITCH_CPU_WIDE, AUX,
/// AUX_OUTPUT_HW_ID, BPF_EVENT. The fields are named in [`Record`]'s variant docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedRecord {
    /// Header facts.
    pub meta: RecordMeta,
    /// The fields in file order, each widened to u64.
    pub fields: [u64; 3],
}

/// One record of a perf.data file.
// Samples are most records; boxing them would allocate per record to save stack space nobody misses.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record<'a> {
    /// PERF_RECORD_SAMPLE.
    Sample(SampleRecord<'a>),
    /// PERF_RECORD_MMAP.
    Mmap(MmapRecord<'a>),
    /// PERF_RECORD_MMAP2.
    Mmap2(Mmap2Record<'a>),
    /// PERF_RECORD_COMM.
    Comm(CommRecord<'a>),
    /// PERF_RECORD_FORK.
    Fork(ForkRecord),
    /// PERF_RECORD_EXIT.
    Exit(ForkRecord),
    /// PERF_RECORD_LOST.
    Lost(LostRecord),
    /// PERF_RECORD_THROTTLE.
    Throttle(ThrottleRecord),
    /// PERF_RECORD_UNTHROTTLE.
    Unthrottle(ThrottleRecord),
    /// PERF_RECORD_LOST_SAMPLES: fields `[lost, 0, 0]`.
    LostSamples(FixedRecord),
    /// PERF_RECORD_ITRACE_START: `[pid, tid, 0]`.
    ItraceStart(FixedRecord),
    /// PERF_RECORD_SWITCH (`misc & PERF_RECORD_MISC_SWITCH_OUT`): no fields.
    Switch(FixedRecord),
    /// PERF_RECORD_SWITCH_CPU_WIDE: `[next_prev_pid, next_prev_tid, 0]`.
    SwitchCpuWide(FixedRecord),
    /// PERF_RECORD_AUX: `[aux_offset, aux_size, flags]`.
    Aux(FixedRecord),
    /// PERF_RECORD_AUX_OUTPUT_HW_ID: `[hw_id, 0, 0]`.
    AuxOutputHwId(FixedRecord),
    /// PERF_RECORD_BPF_EVENT, kept raw (`body` without the `sample_id` trailer).
    BpfEvent(RawRecord<'a>),
    /// READ, NAMESPACES, KSYMBOL, CGROUP, TEXT_POKE, CALLCHAIN_DEFERRED: known kernel records kept raw
    /// (`body` without the `sample_id` trailer).
    OtherKernel(RawRecord<'a>),
    /// PERF_RECORD_FINISHED_ROUND.
    FinishedRound(RecordMeta),
    /// PERF_RECORD_FINISHED_INIT.
    FinishedInit(RecordMeta),
    /// A user record type bport knows but does not interpret (HEADER_ATTR, ID_INDEX, TIME_CONV, …).
    User(RawRecord<'a>),
    /// A record type bport does not know (a newer kernel or perf); skipped with one warning per type.
    Unknown(RawRecord<'a>),
}

impl<'a> Record<'a> {
    /// The header facts of any record.
    pub fn meta(&self) -> &RecordMeta {
        match self {
            Record::Sample(r) => &r.meta,
            Record::Mmap(r) => &r.meta,
            Record::Mmap2(r) => &r.meta,
            Record::Comm(r) => &r.meta,
            Record::Fork(r) | Record::Exit(r) => &r.meta,
            Record::Lost(r) => &r.meta,
            Record::Throttle(r) | Record::Unthrottle(r) => &r.meta,
            Record::LostSamples(r)
            | Record::ItraceStart(r)
            | Record::Switch(r)
            | Record::SwitchCpuWide(r)
            | Record::Aux(r)
            | Record::AuxOutputHwId(r) => &r.meta,
            Record::BpfEvent(r) | Record::OtherKernel(r) | Record::User(r) | Record::Unknown(r) => {
                &r.meta
            }
            Record::FinishedRound(m) | Record::FinishedInit(m) => m,
        }
    }

    fn meta_mut(&mut self) -> &mut RecordMeta {
        match self {
            Record::Sample(r) => &mut r.meta,
            Record::Mmap(r) => &mut r.meta,
            Record::Mmap2(r) => &mut r.meta,
            Record::Comm(r) => &mut r.meta,
            Record::Fork(r) | Record::Exit(r) => &mut r.meta,
            Record::Lost(r) => &mut r.meta,
            Record::Throttle(r) | Record::Unthrottle(r) => &mut r.meta,
            Record::LostSamples(r)
            | Record::ItraceStart(r)
            | Record::Switch(r)
            | Record::SwitchCpuWide(r)
            | Record::Aux(r)
            | Record::AuxOutputHwId(r) => &mut r.meta,
            Record::BpfEvent(r) | Record::OtherKernel(r) | Record::User(r) | Record::Unknown(r) => {
                &mut r.meta
            }
            Record::FinishedRound(m) | Record::FinishedInit(m) => m,
        }
    }

    /// The record's timestamp, if it has one (samples with TIME; others through the `sample_id` trailer).
    pub fn time(&self) -> Option<u64> {
        self.meta().sample_id.time
    }

    /// The record with `meta.offset` set to `offset` (tests compare records read from different files).
    pub fn with_offset(mut self, offset: u64) -> Self {
        self.meta_mut().offset = offset;
        self
    }
}

/// Whether `ty` is a type this module knows (kernel or user).
pub fn is_known_type(ty: u32) -> bool {
    table::record_type_name(ty).is_some()
}
