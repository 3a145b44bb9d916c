//! Driving a perf.data file through the machine state and the resolver: the per-sample API ([`samples`]) that
//! `verify` and `flamegraph` use, and the text output ([`write_script`]).

use super::format::Fields;
use super::machine::Machine;
use super::resolve::{
    choose_mode, FrameRef, Resolver, SampleInput, MISC_KERNEL, PERF_SAMPLE_CALLCHAIN,
    PERF_SAMPLE_CPU,
};
use super::{CallchainMode, Frame, Options, SampleInfo};
use crate::perf::data::{PerfFile, ReadError, Record};
use crate::perf::symbols::{FileLookup, FsLookup, Symbolizer};
use crate::perf::unwind::lbr;
use std::collections::BTreeSet;
use std::io::Write;
use std::rc::Rc;

use crate::perf::abi::{PERF_SAMPLE_PERIOD, PERF_SAMPLE_TIME};

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
    name: Rc<str>,
    mode: CallchainMode,
    has_callchain: bool,
    fields: Fields,
}

/// perf's name for an event without an EVENT_DESC entry (evsel__name for the common types; `:p…` for
/// `precise_ip`).
fn fallback_event_name(type_: u32, config: u64, precise: u8) -> String {
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
    let base = match type_ {
        0 => HW.get(config as usize).map(|s| s.to_string()),
        1 => SW.get(config as usize).map(|s| s.to_string()),
        _ => None,
    }
    .unwrap_or_else(|| format!("raw 0x{config:x}"));
    if precise > 0 {
        format!("{base}:{}", "p".repeat(precise.into()))
    } else {
        base
    }
}

/// An iterator over a file's samples with their symbolized callchains.
pub struct Samples<'f, L: FileLookup = FsLookup> {
    records: crate::perf::data::Records<'f>,
    machine: Machine,
    resolver: Resolver<L>,
    events: Vec<Event>,
    name_width: usize,
    reported: BTreeSet<String>,
    /// Warnings gathered so far (DSO problems are added as they are met).
    pub warnings: Vec<String>,
    /// DSOs a sample's IP fell into (perf's `dso->hit`, what `buildid-list --with-hits` and `archive` use).
    pub hits: std::collections::HashSet<Rc<str>>,
    /// The map id of the last sample's IP (ids start at 1), whose DSO is in `hits` already.
    last_hit: u64,
    callchain_buf: Vec<u64>,
    regs_buf: Vec<u64>,
    /// The symbolizer's DSO count when problems were last collected.
    dsos_seen: usize,
    refs_buf: Vec<FrameRef>,
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
    let mut resolver = Resolver::new(Symbolizer::new(lookup, options.symbolizer.clone()), options);
    for entry in file.build_ids() {
        let kernel = entry.misc & 7 == MISC_KERNEL;
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
    let events: Vec<Event> = file
        .attrs()
        .iter()
        .map(|a| {
            let st = a.attr.sample_type;
            let name = a.name.clone().unwrap_or_else(|| {
                fallback_event_name(a.attr.type_, a.attr.config, a.attr.precise_ip())
            });
            Event {
                name: Rc::from(name),
                mode: options.mode.unwrap_or_else(|| {
                    choose_mode(st, a.attr.branch_sample_type, options.legacy_mode_selection)
                }),
                has_callchain: st & PERF_SAMPLE_CALLCHAIN != 0,
                fields: Fields::for_event(
                    options.fields.as_ref(),
                    st & PERF_SAMPLE_CPU != 0,
                    st & PERF_SAMPLE_TIME != 0,
                    st & PERF_SAMPLE_PERIOD != 0,
                ),
            }
        })
        .collect();
    let name_width = events.iter().map(|e| e.name.len()).max().unwrap_or(0);
    Samples {
        records: file.records(),
        machine: Machine::new(),
        resolver,
        events,
        name_width,
        reported: BTreeSet::new(),
        hits: std::collections::HashSet::new(),
        last_hit: 0,
        callchain_buf: Vec::new(),
        regs_buf: Vec::new(),
        dsos_seen: 0,
        refs_buf: Vec::new(),
        warnings: file.warnings().iter().map(|w| w.to_string()).collect(),
    }
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
        // Per sample, so only when a DSO was loaded since the last look.
        let loaded = self.resolver.symbolizer.loaded_count();
        if loaded == self.dsos_seen {
            return;
        }
        self.dsos_seen = loaded;
        for dso in self.resolver.symbolizer.loaded() {
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
                    self.warnings.push(format!("{}: {p}", dso.path));
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
            let info = SampleInfo {
                attr_index: s.attr_index,
                event: event.name.clone(),
                comm: self.machine.comm_of(tid),
                pid,
                tid,
                cpu: s.cpu,
                time: s.time,
                period: s.period,
                ip: s.ip.unwrap_or(0),
                cpumode,
                mode: event.mode,
                has_callchain: event.has_callchain,
            };
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

    /// The address of a callchain frame of the sample just returned, for a frame in a file map without a
    /// symbol: its printed address is map-relative, and perf's report names such an entry by the address
    /// itself (`fill_callchain_info`: `al->addr = node->ip`). `None` for any other frame.
    pub fn unresolved_address(&self, info: &SampleInfo, frame: &Frame) -> Option<u64> {
        if frame.sym.is_some() {
            return None;
        }
        let dso = frame.dso.as_deref()?;
        self.machine.user_maps(info.pid)?.unmap(dso, frame.addr)
    }

    /// The run's outcome after `samples` samples: the warnings gathered and the reader's.
    fn outcome(&mut self, samples: u64) -> Outcome {
        let mut warnings = std::mem::take(&mut self.warnings);
        warnings.extend(self.records.warnings().iter().map(|w| w.to_string()));
        Outcome { samples, warnings }
    }

    /// Output fields and the event-name width for a sample of this file.
    fn layout(&self, attr_index: usize) -> (Fields, usize) {
        let fields = self.events.get(attr_index).map(|e| e.fields);
        (
            fields.unwrap_or_else(|| Fields::for_event(None, false, false, false)),
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

/// Writes `file` as `perf script` would print it.
pub fn write_script(
    file: &PerfFile,
    options: &Options,
    out: &mut (impl Write + Send),
) -> Result<Outcome, ScriptError> {
    write_script_with(file, options, FsLookup, out)
}

/// Like [`write_script`], reading DSOs through `lookup`.
///
/// The text is formatted and written by another thread (see `output`): the resolving of samples is the run's
/// bottleneck, and kernel frames are symbolized there too, so this thread never waits for the kernel's symbols.
pub fn write_script_with<L: FileLookup>(
    file: &PerfFile,
    options: &Options,
    lookup: L,
    out: &mut (impl Write + Send),
) -> Result<Outcome, ScriptError> {
    let mut it = samples_with(file, options, lookup);
    let layouts: Vec<(Fields, usize)> = (0..it.events.len()).map(|i| it.layout(i)).collect();
    let names = it.events.iter().map(|e| e.name.to_string()).collect();
    let kernel = it.defer_kernel_symbols();
    let n = super::output::write_threaded(&mut it, &layouts, names, kernel, out)?;
    Ok(it.outcome(n))
}
