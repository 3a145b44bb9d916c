//! Driving a perf.data file through the machine state and the resolver: the per-sample API ([`samples`]) that
//! `verify` and `flamegraph` use, and the text output ([`super::write_script`]).

use super::format::Fields;
use super::machine::Machine;
use super::mem::MemFields;
use super::resolve::{
    choose_mode, FrameRef, Resolver, SampleInput, MISC_KERNEL, PERF_SAMPLE_CALLCHAIN,
};
use super::{CallchainMode, Frame, Options, SampleInfo};
use crate::perf::data::{PerfFile, ReadError, Record, Warning, WarningLog};
use crate::perf::symbols::{DsoProblem, FileLookup, FsLookup, Symbolizer};
use crate::perf::unwind::lbr;
use std::collections::BTreeSet;
use std::rc::Rc;

/// Why a script run failed. Per-sample problems (missing DSOs, bad unwind tables) are not errors: they give
/// `[unknown]` frames and a warning in the [`Outcome`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// The perf.data file could not be read further.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Writing the output failed (a closed pipe included).
    #[error("cannot write the script output: {0}")]
    Io(#[from] std::io::Error),
}

/// What a script run did, besides its output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Samples written.
    pub samples: u64,
    /// Things the user should know: reader warnings, DSOs not found or rejected for a build-id mismatch.
    pub warnings: Vec<String>,
}

struct Event {
    /// For a tracepoint whose format the file carries: its id (the attr's config).
    tracepoint: Option<u64>,
    name: Rc<str>,
    mode: CallchainMode,
    has_callchain: bool,
    fields: Fields,
    /// `attr.sample_period` (the frequency, in frequency mode), which perf prints as the period of samples
    /// without PERF_SAMPLE_PERIOD.
    attr_period: u64,
    /// The weight is PERF_SAMPLE_WEIGHT_STRUCT (weight and instruction latency in one word).
    weight_struct: bool,
}

/// perf's name for an event without an EVENT_DESC entry (perf 6.1 util/evsel.c `evsel__name`: the type's name
/// for the config, then `evsel__add_modifiers`' `:ukhppHG` suffix). Pipe-mode files and files from old perf
/// versions carry no event names, so every line of theirs shows this.
pub(crate) fn fallback_event_name(attr: &crate::perf::data::PerfEventAttr) -> String {
    const HW: [&str; 10] = [
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-misses",
        "bus-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "ref-cycles",
    ];
    const SW: [&str; 12] = [
        "cpu-clock",
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
        "minor-faults",
        "major-faults",
        "alignment-faults",
        "emulation-faults",
        "dummy",
        "bpf-output",
        "cgroup-switches",
    ];
    let config = attr.config;
    let base = match attr.type_ {
        0 => HW
            .get(config as usize)
            .unwrap_or(&"unknown-hardware")
            .to_string(),
        1 => SW
            .get(config as usize)
            .unwrap_or(&"unknown-software")
            .to_string(),
        3 => hw_cache_name(config),
        4 => format!("raw 0x{config:x}"),
        // evsel__name's tracepoint and default cases have no modifiers.
        2 => return "unknown tracepoint".to_owned(),
        t => return format!("unknown attr type: {t}"),
    };
    base + &event_modifiers(attr)
}

/// `evsel__add_modifiers`: `:` and the privilege levels counted (only when some are excluded), `p`s for
/// `precise_ip`, and `H`/`G` when the host/guest exclusion differs from the default implied by the others.
fn event_modifiers(attr: &crate::perf::data::PerfEventAttr) -> String {
    use crate::perf::abi::consts::{
        ATTR_FLAG_EXCLUDE_GUEST, ATTR_FLAG_EXCLUDE_HOST, ATTR_FLAG_EXCLUDE_HV,
        ATTR_FLAG_EXCLUDE_KERNEL, ATTR_FLAG_EXCLUDE_USER,
    };
    let excluded = |bit| attr.has_flag(bit);
    let mut mods = String::new();
    let mut guest_default = false;
    if excluded(ATTR_FLAG_EXCLUDE_KERNEL)
        || excluded(ATTR_FLAG_EXCLUDE_USER)
        || excluded(ATTR_FLAG_EXCLUDE_HV)
    {
        for (bit, c) in [
            (ATTR_FLAG_EXCLUDE_KERNEL, 'k'),
            (ATTR_FLAG_EXCLUDE_USER, 'u'),
            (ATTR_FLAG_EXCLUDE_HV, 'h'),
        ] {
            if !excluded(bit) {
                mods.push(c);
            }
        }
        guest_default = true;
    }
    let precise = attr.precise_ip();
    if precise > 0 {
        mods.push_str(&"ppp"[..usize::from(precise.min(3))]);
        guest_default = true;
    }
    if excluded(ATTR_FLAG_EXCLUDE_HOST) || excluded(ATTR_FLAG_EXCLUDE_GUEST) == guest_default {
        for (bit, c) in [
            (ATTR_FLAG_EXCLUDE_HOST, 'H'),
            (ATTR_FLAG_EXCLUDE_GUEST, 'G'),
        ] {
            if !excluded(bit) {
                mods.push(c);
            }
        }
    }
    if mods.is_empty() {
        mods
    } else {
        format!(":{mods}")
    }
}

/// `evsel__hw_cache_name`: `L1-dcache-loads`, `LLC-load-misses`, … from a PERF_TYPE_HW_CACHE config.
fn hw_cache_name(config: u64) -> String {
    const CACHE: [&str; 7] = [
        "L1-dcache",
        "L1-icache",
        "LLC",
        "dTLB",
        "iTLB",
        "branch",
        "node",
    ];
    // [op][0] with a result, [op][1] without.
    const OP: [[&str; 2]; 3] = [
        ["load", "loads"],
        ["store", "stores"],
        ["prefetch", "prefetches"],
    ];
    const RESULT: [&str; 2] = ["refs", "misses"];
    let (ty, op, result) = (config & 0xff, (config >> 8) & 0xff, (config >> 16) & 0xff);
    let valid = (ty as usize) < CACHE.len()
        && (op as usize) < OP.len()
        && (result as usize) < RESULT.len()
        && hw_cache_op_valid(ty, op);
    if !valid {
        return "invalid-cache".to_owned();
    }
    let cache = CACHE[ty as usize];
    let op = OP[op as usize];
    if result != 0 {
        format!("{cache}-{}-{}", op[0], RESULT[result as usize])
    } else {
        format!("{cache}-{}", op[1])
    }
}

/// `evsel__is_cache_op_valid` (perf 6.1 `evsel__hw_cache_stat`): which cache supports which operation.
fn hw_cache_op_valid(ty: u64, op: u64) -> bool {
    const READ: u8 = 1;
    const WRITE: u8 = 2;
    const PREFETCH: u8 = 4;
    const STAT: [u8; 7] = [
        READ | WRITE | PREFETCH,
        READ | PREFETCH,
        READ | WRITE | PREFETCH,
        READ | WRITE,
        READ,
        READ,
        READ | WRITE | PREFETCH,
    ];
    STAT[ty as usize] & (1 << op) != 0
}

impl Event {
    /// What the output prints of sample `s` of this event, besides its frames.
    #[inline]
    fn sample_info(
        &self,
        s: &crate::perf::data::SampleRecord<'_>,
        machine: &Machine,
        trace_events: &crate::perf::trace::FileEvents,
        pid: i32,
        tid: i32,
    ) -> SampleInfo {
        SampleInfo {
            attr_index: s.attr_index,
            event: self.name.clone(),
            comm: machine.comm_of(tid),
            pid,
            tid,
            cpu: s.cpu,
            time: s.time,
            period: Some(s.period.unwrap_or(self.attr_period)),
            mem: {
                let (weight, ins_lat) = MemFields::weight_of(s.weight, self.weight_struct);
                MemFields {
                    addr: s.addr,
                    data_src: s.data_src,
                    weight,
                    ins_lat,
                }
            },
            ip: s.ip.unwrap_or(0),
            cpumode: s.meta.cpumode(),
            mode: self.mode,
            has_callchain: self.has_callchain,
            trace: self
                .tracepoint
                .zip(s.raw)
                .and_then(|(id, raw)| trace_events.line(id, raw)),
        }
    }
}

/// An iterator over a file's samples with their symbolized callchains.
pub struct Samples<'f, L: FileLookup = FsLookup> {
    records: crate::perf::data::Records<'f>,
    machine: Machine,
    resolver: Resolver<L>,
    events: Vec<Event>,
    /// The tracepoint formats of the file's tracing data.
    trace_events: crate::perf::trace::FileEvents,
    name_width: usize,
    reported: BTreeSet<String>,
    /// The file's warnings.
    pub warnings: Vec<String>,
    /// DSO problems, as they are met (at most a few of each kind word for word).
    dso_problems: WarningLog,
    /// DSOs a sample's IP fell into (perf's `dso->hit`, what `buildid-list --with-hits` and `archive` use).
    pub hits: std::collections::HashSet<Rc<str>>,
    /// The map id of the last sample's IP (ids start at 1), whose DSO is in `hits` already.
    last_hit: u64,
    /// The `lost` counts of the PERF_RECORD_LOST_SAMPLES records read so far (perf's evlist-wide
    /// `total_lost_samples`, the `Total Lost Samples` line of `report`).
    pub lost_samples: u64,
    callchain_buf: Vec<u64>,
    regs_buf: Vec<u64>,
    /// The symbolizer's DSO count when problems were last collected.
    dsos_seen: usize,
    refs_buf: Vec<FrameRef>,
    /// The branch stack of the sample just returned (from, to, flags word), kept only when
    /// [`Samples::track_branches`] asked for it (`report`'s branch mode).
    branches: Option<Vec<(u64, u64, u64)>>,
}

/// Starts reading `file`'s samples, symbolizing through the real file system.
pub fn samples<'f>(file: &'f PerfFile, options: &Options) -> Samples<'f, FsLookup> {
    samples_with(file, options, FsLookup)
}

/// Like [`samples`], reading DSOs through `lookup`.
pub fn samples_with<'f, L: FileLookup>(
    file: &'f PerfFile,
    options: &Options,
    lookup: L,
) -> Samples<'f, L> {
    let (resolver, machine) = resolver_for(file, options, lookup);
    // A damaged tracing-data section costs the trace lines only (perf prints none either), with a warning.
    let (trace_events, trace_warning) =
        match crate::perf::trace::FileEvents::from_features(file.features()) {
            Ok(t) => (t, None),
            Err(e) => (
                Default::default(),
                Some(format!("tracepoint formats unreadable: {e}")),
            ),
        };
    let events = events_of(file, options, &trace_events);
    let name_width = events.iter().map(|e| e.name.len()).max().unwrap_or(0);
    Samples {
        records: file.records(),
        machine,
        resolver,
        events,
        trace_events,
        name_width,
        reported: BTreeSet::new(),
        hits: std::collections::HashSet::new(),
        last_hit: 0,
        lost_samples: 0,
        callchain_buf: Vec::new(),
        regs_buf: Vec::new(),
        dsos_seen: 0,
        dso_problems: WarningLog::new(),
        refs_buf: Vec::new(),
        branches: None,
        warnings: file
            .warnings()
            .iter()
            .map(|w| w.to_string())
            .chain(trace_warning)
            .collect(),
    }
}

/// The resolver and machine for `file`: the recorded build-ids known to both, the kernel's symbol table
/// loading already when samples will need it.
fn resolver_for<L: FileLookup>(
    file: &PerfFile,
    options: &Options,
    lookup: L,
) -> (Resolver<L>, Machine) {
    let mut resolver = Resolver::new(Symbolizer::new(lookup, options.symbolizer.clone()), options);
    let mut machine = Machine::new();
    for entry in file.build_ids() {
        let kernel = entry.misc & 7 == MISC_KERNEL;
        if kernel && entry.filename.starts_with('/') {
            machine.kernel_build_id_paths.insert(entry.filename.clone());
        }
        if kernel && entry.filename.starts_with("[kernel.kallsyms]") {
            resolver.kernel_build_id = Some(entry.build_id.clone());
        }
        resolver
            .build_ids
            .insert(entry.filename.clone(), entry.build_id.clone());
    }
    // A recorded kernel build-id means samples hit the kernel: its symbol table (~150,000 lines) is parsed
    // meanwhile, instead of when the first kernel frame is met.
    if let Some(bid) = resolver.kernel_build_id.clone() {
        resolver.symbolizer.prefetch_kernel(Some(&bid));
    } else if file
        .attrs()
        .iter()
        .any(|a| a.attr.flags & crate::perf::abi::ATTR_FLAG_EXCLUDE_KERNEL == 0)
    {
        // No build-id list (pipe mode, compressed files as read so far), but events that count in the kernel.
        resolver.symbolizer.prefetch_kernel(None);
    }
    (resolver, machine)
}

/// Each of `file`'s events as the samples are printed with: its name, callchain mode and fields.
fn events_of(
    file: &PerfFile,
    options: &Options,
    trace_events: &crate::perf::trace::FileEvents,
) -> Vec<Event> {
    file.attrs()
        .iter()
        .map(|a| {
            let st = a.attr.sample_type;
            // Without EVENT_DESC, perf names a tracepoint from the tracing data (`sys:name`, set when it
            // prepares the tracepoint events), else evsel__name's "unknown tracepoint".
            let name = a.name.clone().unwrap_or_else(|| {
                match (a.attr.type_ == crate::perf::abi::PERF_TYPE_TRACEPOINT)
                    .then(|| trace_events.get(a.attr.config))
                    .flatten()
                {
                    Some((system, printer)) => format!("{system}:{}", printer.format.name),
                    None => fallback_event_name(&a.attr),
                }
            });
            let tracepoint = (a.attr.type_ == crate::perf::abi::PERF_TYPE_TRACEPOINT
                && trace_events.get(a.attr.config).is_some())
            .then_some(a.attr.config);
            Event {
                tracepoint,
                name: Rc::from(name),
                mode: options.mode.unwrap_or_else(|| {
                    choose_mode(st, a.attr.branch_sample_type, options.legacy_mode_selection)
                }),
                has_callchain: st & PERF_SAMPLE_CALLCHAIN != 0,
                attr_period: a.attr.sample_period_or_freq,
                weight_struct: st & crate::perf::abi::PERF_SAMPLE_WEIGHT_STRUCT != 0,
                fields: if tracepoint.is_some() {
                    Fields::for_tracepoint(options.fields.as_ref(), st & PERF_SAMPLE_CALLCHAIN != 0)
                } else {
                    Fields::for_event(options.fields.as_ref(), a.attr.type_, st)
                },
            }
        })
        .collect()
}

impl<L: FileLookup> Samples<'_, L> {
    fn apply(&mut self, record: &Record<'_>) {
        match record {
            Record::Comm(c) => {
                let comm = String::from_utf8_lossy(trim_nul(c.comm));
                self.machine.comm(c.pid as i32, c.tid as i32, &comm);
            }
            Record::Fork(f) => {
                self.machine
                    .fork(f.pid as i32, f.ppid as i32, f.tid as i32, f.ptid as i32);
            }
            Record::Exit(f) => self.machine.exit(f.pid as i32, f.tid as i32),
            Record::LostSamples(r) => self.lost_samples += r.fields[0],
            Record::Mmap(m) => {
                let name = String::from_utf8_lossy(trim_nul(m.filename));
                let kernel = m.meta.cpumode() == MISC_KERNEL;
                self.machine
                    .mmap(m.pid as i32, m.addr, m.len, m.pgoff, &name, None, kernel);
            }
            Record::Mmap2(m) => {
                let name = String::from_utf8_lossy(trim_nul(m.filename));
                let kernel = m.meta.cpumode() == MISC_KERNEL;
                let bid = match m.inode {
                    crate::perf::data::Mmap2Inode::BuildId(b) => Some(b.to_vec()),
                    _ => None,
                };
                self.machine
                    .mmap(m.pid as i32, m.addr, m.len, m.pgoff, &name, bid, kernel);
            }
            _ => {}
        }
    }

    fn note_problems(&mut self) {
        // Per sample, so only when a DSO was loaded since the last look, and only the new ones (a recording can
        // name millions of DSOs).
        let loaded = self.resolver.symbolizer.loaded_count();
        if loaded == self.dsos_seen {
            return;
        }
        let new = self.dsos_seen..loaded;
        self.dsos_seen = loaded;
        for dso in &self.resolver.symbolizer.loaded()[new] {
            // Memory that is not a file (perf's `is_no_dso_memory`): a frame there is `[unknown]`, nothing is
            // missing (a DWARF chain can step onto a bogus return address in the heap, as perf's does).
            let no_file = ["[heap]", "[stack", "[vsyscall]"]
                .iter()
                .any(|p| dso.path.starts_with(p));
            if no_file {
                continue;
            }
            if let Some(p) = &dso.problem {
                if self.reported.insert(dso.path.clone()) {
                    let kind = match p {
                        DsoProblem::NotFound => "DSOs not found",
                        DsoProblem::BuildIdMismatch { .. } => "DSOs with another build-id",
                        DsoProblem::NotADso { .. } => "files that are not DSOs",
                        _ => "unreadable DSOs",
                    };
                    self.dso_problems.push(
                        kind,
                        Warning {
                            offset: None,
                            message: format!("{}: {p}", dso.path),
                        },
                    );
                }
            }
        }
    }

    /// The next sample with its frames; `None` at the end of the file.
    #[allow(clippy::should_implement_trait)]
    pub fn next_sample(&mut self) -> Option<Result<(SampleInfo, Vec<Frame>), ScriptError>> {
        let mut frames = Vec::new();
        self.next_sample_into(&mut frames)
            .map(|r| r.map(|info| (info, frames)))
    }

    /// [`Samples::next_sample`] with the frames in `frames` (cleared first), a buffer the caller reuses.
    pub fn next_sample_into(
        &mut self,
        frames: &mut Vec<Frame>,
    ) -> Option<Result<SampleInfo, ScriptError>> {
        let mut refs = std::mem::take(&mut self.refs_buf);
        let next = self.next_sample_refs(&mut refs);
        self.resolver.materialize_into(&mut refs, frames);
        self.refs_buf = refs;
        next
    }

    /// From now on, keep the branch stack of every sample ([`Samples::branches`]).
    pub fn track_branches(&mut self) {
        self.branches.get_or_insert_with(Vec::new);
    }

    /// The branch stack of the sample just returned, newest branch first: (from, to, the entry's flags word).
    /// Empty unless [`Samples::track_branches`] was called.
    pub fn branches(&self) -> &[(u64, u64, u64)] {
        self.branches.as_deref().unwrap_or_default()
    }

    /// The frame of a branch-stack address of the sample just returned, resolved as perf's
    /// `ip__resolve_ams` does (machine.c `thread__find_cpumode_addr_location`): in the process's maps if one
    /// holds it, else in the kernel's; with perf's level for it: `.` user, `k` kernel, `H` when no map holds
    /// it (the last mode tried, guest kernel, outside a guest).
    pub fn branch_frame(&mut self, info: &SampleInfo, addr: u64) -> (Frame, char) {
        let (cpumode, level) = if self.machine.user_map(info.pid, addr).is_some() {
            (crate::perf::abi::PERF_RECORD_MISC_USER, '.')
        } else if self.machine.kernel_map(addr).is_some() {
            (MISC_KERNEL, 'k')
        } else {
            (crate::perf::abi::PERF_RECORD_MISC_USER, 'H')
        };
        let input = SampleInput {
            cpumode,
            ip: addr,
            pid: info.pid,
            tid: info.tid,
            ..Default::default()
        };
        let frame = self
            .resolver
            .frames(&self.machine, CallchainMode::Fp, &input)
            .pop()
            .unwrap_or(Frame {
                addr,
                sym: None,
                offset: 0,
                dso: None,
                inlined: false,
            });
        (frame, level)
    }

    /// The name of event (attr) `attr_index` as perf prints it, when the file has that attr.
    pub fn event_name(&self, attr_index: usize) -> Option<Rc<str>> {
        self.events.get(attr_index).map(|e| e.name.clone())
    }

    /// The comm thread `tid` has now (after the last record read): its last COMM, else `:TID`.
    pub fn thread_comm(&self, tid: i32) -> Rc<str> {
        self.machine.comm_of(tid)
    }

    /// From now on, keep the address of every frame of a sample ([`Samples::frame_addresses`]).
    pub fn track_frame_addresses(&mut self) {
        self.resolver.track_frame_addresses();
    }

    /// The address perf's callchain cursor holds for each frame of the sample just returned, in frame order:
    /// the raw address (not map-relative), `return address − 1` for a DWARF-unwound caller. Empty unless
    /// [`Samples::track_frame_addresses`] was called.
    pub fn frame_addresses(&self) -> &[u64] {
        self.resolver.frame_addresses()
    }

    /// A frame reference as a frame (a deferred kernel frame is symbolized here).
    pub fn materialize(&mut self, r: FrameRef) -> Frame {
        self.resolver.materialize(r)
    }

    /// Leaves kernel frames of [`Samples::next_sample_refs`] unsymbolized ([`FrameRef::Kernel`]) and hands
    /// over the kernel symbol table being parsed for them, if one is (`None`: nothing changes).
    pub(super) fn defer_kernel_symbols(
        &mut self,
    ) -> Option<crate::perf::symbols::kallsyms::PendingKallsyms> {
        let bid = self.resolver.kernel_build_id.clone();
        let pending = self
            .resolver
            .symbolizer
            .take_kernel_pending(bid.as_deref())?;
        self.resolver.defer_kernel_symbols();
        Some(pending)
    }

    /// The frames of the resolver's cache, which [`FrameRef::Cached`] entries index.
    pub fn cached_frames(&self) -> &[Frame] {
        self.resolver.cached_frames()
    }

    /// The id of the last sample's chain, when it repeats an earlier one (see [`Resolver::last_chain`]).
    pub fn last_chain(&self) -> Option<u32> {
        self.resolver.last_chain()
    }

    /// [`Samples::next_sample_into`] with the frames as references into the resolver's frame cache.
    pub fn next_sample_refs(
        &mut self,
        frames: &mut Vec<FrameRef>,
    ) -> Option<Result<SampleInfo, ScriptError>> {
        loop {
            let record = match self.records.next()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e.into())),
            };
            let Record::Sample(s) = record else {
                self.apply(&record);
                continue;
            };
            let Some(event) = self.events.get(s.attr_index) else {
                continue;
            };
            let pid = s.pid.map_or(-1, |p| p as i32);
            let tid = s.tid.map_or(-1, |t| t as i32);
            let cpumode = s.meta.cpumode();
            let ip = s.ip.unwrap_or(0);
            let hit = if cpumode == MISC_KERNEL {
                self.machine.kernel_map(ip)
            } else {
                self.machine.user_map(pid, ip)
            };
            if let Some(map) = hit {
                // Consecutive samples mostly hit the same map: skip hashing its path then.
                if self.last_hit != map.id && !self.hits.contains(&map.dso) {
                    self.hits.insert(map.dso.clone());
                }
                self.last_hit = map.id;
            }
            // The callchain and registers go through buffers kept across samples: one allocation each per run,
            // not per sample.
            if let Some(b) = &mut self.branches {
                b.clear();
                if let Some(stack) = &s.branch_stack {
                    b.extend(stack.iter().map(|e| (e.from, e.to, e.flags)));
                }
            }
            let callchain = s.callchain.map(|c| {
                let mut v = std::mem::take(&mut self.callchain_buf);
                v.clear();
                v.extend(c.iter());
                v
            });
            let input = SampleInput {
                cpumode,
                ip: s.ip.unwrap_or(0),
                pid,
                tid,
                callchain,
                branches: s
                    .branch_stack
                    .map(|b| {
                        b.iter()
                            .map(|e| lbr::BranchEntry {
                                from: e.from,
                                to: e.to,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                regs_user: s.regs_user.filter(|r| r.abi != 0).map(|r| {
                    let mut v = std::mem::take(&mut self.regs_buf);
                    v.clear();
                    v.extend(r.values.iter());
                    (r.mask, v)
                }),
                stack_user: s.stack_user.map(|st| st.valid()).unwrap_or(&[]),
            };
            let mut input = input;
            if event.has_callchain {
                self.resolver
                    .frame_refs_into(&self.machine, event.mode, &input, frames);
            } else {
                // No callchain sampled: one frame for the IP, in the sample's own context.
                let callchain = input.callchain.take();
                self.resolver
                    .frame_refs_into(&self.machine, CallchainMode::Fp, &input, frames);
                input.callchain = callchain;
            }
            if let Some(v) = input.callchain.take() {
                self.callchain_buf = v;
            }
            if let Some((_, v)) = input.regs_user.take() {
                self.regs_buf = v;
            }
            let info = event.sample_info(&s, &self.machine, &self.trace_events, pid, tid);
            self.note_problems();
            return Some(Ok(info));
        }
    }

    /// The frame of a sample's own IP (no callchain, no inline expansion), resolved against the machine state
    /// right after [`Samples::next_sample`] returned that sample: what `perf report --no-children` counts.
    pub fn ip_frame(&mut self, info: &SampleInfo) -> Frame {
        let input = SampleInput {
            cpumode: info.cpumode,
            ip: info.ip,
            pid: info.pid,
            tid: info.tid,
            ..Default::default()
        };
        self.resolver
            .frames(&self.machine, CallchainMode::Fp, &input)
            .pop()
            .unwrap_or(Frame {
                addr: info.ip,
                sym: None,
                offset: 0,
                dso: None,
                inlined: false,
            })
    }

    /// The address perf's `report` shows for an unsymbolized kernel IP: relative to its module's start for a
    /// module (`map->map_ip`), as is in the kernel image (whose map is the identity).
    pub fn kernel_report_address(&self, ip: u64) -> u64 {
        match self.machine.kernel_map(ip) {
            Some(m) if &*m.dso != "[kernel.kallsyms]" => (ip - m.start).wrapping_add(m.pgoff),
            _ => ip,
        }
    }

    /// The run's outcome after `samples` samples: the warnings gathered and the reader's.
    pub(super) fn outcome(&mut self, samples: u64) -> Outcome {
        let mut warnings = std::mem::take(&mut self.warnings);
        let mut dso_problems = std::mem::take(&mut self.dso_problems);
        dso_problems.finish();
        warnings.extend(dso_problems.as_slice().iter().map(|w| w.to_string()));
        warnings.extend(self.records.warnings().iter().map(|w| w.to_string()));
        Outcome { samples, warnings }
    }

    /// Each event's output fields and the event-name width, in attr order.
    pub(super) fn layouts(&self) -> Vec<(Fields, usize)> {
        (0..self.events.len()).map(|i| self.layout(i)).collect()
    }

    /// Each event's name, in attr order.
    pub(super) fn event_names(&self) -> Vec<String> {
        self.events.iter().map(|e| e.name.to_string()).collect()
    }

    /// Output fields and the event-name width for a sample of this file.
    fn layout(&self, attr_index: usize) -> (Fields, usize) {
        let fields = self.events.get(attr_index).map(|e| e.fields);
        (
            fields.unwrap_or_else(|| Fields::for_event(None, 0, 0)),
            self.name_width,
        )
    }
}

impl<L: FileLookup> Iterator for Samples<'_, L> {
    type Item = Result<(SampleInfo, Vec<Frame>), ScriptError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_sample()
    }
}

fn trim_nul(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}
