//! Turning one sample into its symbolized callchain: the callchain mode chosen from the sample type (the v4.3 rule
//! of perf commit 7322d6c98dd2), the kernel part from the kernel's callchain, the user part from DWARF unwinding
//! or the LBR call stack, and each frame's map, symbol and printed address as `perf script` shows them.

use super::machine::{IdMap, Machine, Map, MapKind, Maps};
use super::{CallchainMode, Frame, Options};
use crate::perf::symbols::{FileLookup, Symbolizer};
use crate::perf::unwind::dwarf::{self, UnwindOptions};
use crate::perf::unwind::{
    fp, lbr, ChainFrame, Context, FrameAddress, Module, RegsX86_64, StackSnapshot, StopReason,
};
use std::collections::HashMap;
use std::rc::Rc;

pub use crate::perf::abi::{
    PERF_RECORD_MISC_GUEST_KERNEL as MISC_GUEST_KERNEL,
    PERF_RECORD_MISC_GUEST_USER as MISC_GUEST_USER, PERF_RECORD_MISC_HYPERVISOR as MISC_HYPERVISOR,
    PERF_RECORD_MISC_KERNEL as MISC_KERNEL, PERF_RECORD_MISC_USER as MISC_USER,
    PERF_SAMPLE_BRANCH_CALL_STACK, PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_CALLCHAIN,
    PERF_SAMPLE_CPU, PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER,
};

/// Chooses how a sample's callchain is built, from its event's sample type: perf ≥ 4.3's rule
/// (`perf script: Initialize callchain_param.record_mode`, 7322d6c98dd2). Before that fix perf script always
/// used the kernel callchain, so DWARF recordings showed no user frames; `legacy` reproduces that.
pub fn choose_mode(sample_type: u64, branch_sample_type: u64, legacy: bool) -> CallchainMode {
    if legacy {
        return CallchainMode::Fp;
    }
    if sample_type & PERF_SAMPLE_REGS_USER != 0 && sample_type & PERF_SAMPLE_STACK_USER != 0 {
        CallchainMode::Dwarf
    } else if sample_type & PERF_SAMPLE_BRANCH_STACK != 0
        && branch_sample_type & PERF_SAMPLE_BRANCH_CALL_STACK != 0
    {
        CallchainMode::Lbr
    } else {
        CallchainMode::Fp
    }
}

/// What the resolver needs of one sample, independent of how the file stored it.
#[derive(Clone, Debug, Default)]
pub struct SampleInput<'a> {
    /// The record's cpumode (`misc & 7`).
    pub cpumode: u16,
    /// `PERF_SAMPLE_IP`.
    pub ip: u64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// The kernel's callchain, markers included.
    pub callchain: Option<Vec<u64>>,
    /// LBR entries `(from, to)`, innermost first.
    pub branches: Vec<lbr::BranchEntry>,
    /// `regs_user` mask and values (`None` when absent or `abi == NONE`).
    pub regs_user: Option<(u64, Vec<u64>)>,
    /// The valid part of `stack_user` (its first `dyn_size` bytes).
    pub stack_user: &'a [u8],
}

/// One frame of a resolved sample: an entry of the resolver's frame cache ([`Resolver::cached_frames`]), or a
/// frame resolved for this sample only (unmapped addresses, JIT maps). Lets the text output format each cached
/// frame once per run instead of once per sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameRef {
    /// Index into [`Resolver::cached_frames`].
    Cached(u32),
    /// A frame not in the cache.
    Owned(Frame),
    /// A kernel address left for the consumer to symbolize ([`Resolver::defer_kernel_symbols`]), in the kernel
    /// map `map` (an id unique per map) named `dso`.
    Kernel {
        /// The map's id.
        map: u64,
        /// The address (printed as it is).
        addr: u64,
        /// The map's DSO name (`[kernel.kallsyms]` or a module's).
        dso: Rc<str>,
    },
}

/// Slots of the resolver's direct-mapped memo of recent addresses (a power of two).
const MEMO_SLOTS: usize = 4096;

/// One memo slot: the frame-cache range an address of a process resolved to, valid at one machine generation.
#[derive(Clone, Copy, Debug, Default)]
struct Memo {
    valid: bool,
    avma: u64,
    pid: i32,
    /// Kernel context (bit 0), inline frames shown (bit 1).
    flags: u8,
    generation: u64,
    start: u32,
    len: u32,
}

/// Slots of the chain memo: a sample's whole resolved chain by its addresses (see [`ChainMemo`]).
const CHAIN_SLOTS: usize = 1024;

/// One chain-memo slot: the cached frames a whole callchain of a process resolved to, valid at one machine
/// generation. Samples of a hot loop repeat their chain exactly (99% of the built-in workload's DWARF samples,
/// 77% of a Python run's), and looking each frame up again, even in the per-address memo, was a tenth of the
/// resolving thread.
#[derive(Debug, Default)]
struct ChainMemo {
    pid: i32,
    generation: u64,
    /// `None` in a slot not used yet.
    mode: Option<CallchainMode>,
    sample_context: Option<Context>,
    chain: Vec<ChainFrame>,
    ids: Vec<u32>,
    /// The chain's id once it repeated (see [`Resolver::last_chain`]).
    id: Option<u32>,
}

/// What a remembered chain must match besides its addresses to be replayed.
struct ChainKey {
    mode: CallchainMode,
    pid: i32,
    generation: u64,
    sample_context: Context,
}

/// Chain ids handed out per run at most: a consumer keeps each repeated chain's text, ~0.5 KB, so this bounds
/// that to some tens of MB on a run whose chains repeat once and never again.
const MAX_CHAIN_IDS: u32 = 1 << 16;

fn chain_slot(pid: i32, chain: &[ChainFrame]) -> usize {
    let mut h = u64::from(pid as u32);
    for f in chain {
        h = (h.rotate_left(5) ^ f.addr.address()).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    (h >> 40) as usize % CHAIN_SLOTS
}

/// Appends the references to cached frames `start..start + len`. Nearly always one frame (an address without
/// inlined callers): pushed directly, as the range iterator `extend` takes cost more than the push itself on
/// this once-per-frame path.
#[inline]
fn push_cached(out: &mut Vec<FrameRef>, start: u32, len: u32) {
    if len == 1 {
        out.push(FrameRef::Cached(start));
    } else {
        for id in start..start.saturating_add(len) {
            out.push(FrameRef::Cached(id));
        }
    }
}

fn memo_slot(pid: i32, avma: u64) -> usize {
    let h = (avma ^ u64::from(pid as u32).rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 52) as usize & (MEMO_SLOTS - 1)
}

/// A file map, its loaded DSO and the map's bias (`avma − svma`, `None` when the DSO is unreadable).
type MapDso = (Rc<Map>, Rc<UnwindTables>, Option<u64>);

/// A DSO's DWARF unwind tables (`perf::unwind`), built from its images the first time a DWARF sample needs
/// them: the script run owns them, not the symbolizer, which only reads files.
pub(crate) struct UnwindTables {
    dso: Rc<crate::perf::symbols::Dso>,
    tables: std::cell::OnceCell<Option<dwarf::UnwindInfo>>,
}

impl UnwindTables {
    fn get(&self) -> Option<&dwarf::UnwindInfo> {
        self.tables
            .get_or_init(|| {
                let mut info = dwarf::UnwindInfo::from_elf(self.dso.runtime_image()?).ok()?;
                if let Some(debug) = self.dso.debug_image() {
                    let _ = info.add_debug_file(debug);
                }
                (!info.is_empty()).then_some(info)
            })
            .as_ref()
    }
}

/// Resolves samples to frames, with the per-run caches: DSOs (in the symbolizer) and per-map biases.
pub struct Resolver<L: FileLookup> {
    /// The symbolizer (per-DSO caches).
    pub symbolizer: Symbolizer<L>,
    /// Build-ids recorded in the file (BUILD_ID feature), by path.
    pub build_ids: HashMap<String, Vec<u8>>,
    /// The kernel image's recorded build-id.
    pub kernel_build_id: Option<Vec<u8>>,
    max_stack: usize,
    /// addr2line answers per (DSO, svma): DWARF-mode samples hit the same addresses over and over.
    inline_cache: IdMap<(usize, u64), Rc<[Rc<str>]>>,
    /// The DSO of each file map, by map id: one symbolizer lookup (and build-id clone) per map, not per frame.
    map_dsos: IdMap<u64, Rc<crate::perf::symbols::Dso>>,
    /// Unwind tables by DSO (its address: the symbolizer keeps every DSO for the run).
    unwind_tables: IdMap<usize, Rc<UnwindTables>>,
    /// The kernel's symbols once loaded.
    kernel: Option<Rc<crate::perf::symbols::kallsyms::Kallsyms>>,
    /// Per process, the modules its last DWARF unwind needed (with their biases), so the next unwind starts
    /// with them loaded, and the machine generation they were checked at.
    modules: IdMap<i32, (u64, Vec<MapDso>)>,
    /// The frames an address resolved to, by (map id, address, whether inline frames are shown), as a range of
    /// `frame_arena`: samples hit the same few thousand addresses again and again, and the symbol search,
    /// inline lookup and name clones were a fifth of `bport script`. Anonymous (JIT) maps are not cached:
    /// their symbols come from a per-process file.
    frame_cache: IdMap<(u64, u64, bool), (u32, u32)>,
    frame_arena: Vec<Frame>,
    /// The callchain being resolved, and the user frames of a DWARF unwind: kept across samples for their
    /// allocations.
    chain_buf: Vec<ChainFrame>,
    unwind_buf: Vec<FrameAddress>,
    /// [`Resolver::modules`]' entry of the process unwound last, kept out of the map: consecutive samples are
    /// mostly of one process, and the lookup and reinsertion per sample showed in profiles.
    last_modules: Option<(i32, u64, Vec<MapDso>)>,
    /// Per process: whether perf's libunwind would have an address space for it (some map's DSO is a readable
    /// ELF), with the machine generation a `false` was found at (a `true` stays true, as perf's does).
    unwindable: IdMap<i32, (bool, u64)>,
    /// Recently resolved addresses ([`MEMO_SLOTS`] slots, allocated at first use).
    memo: Vec<Memo>,
    /// Recently resolved whole chains ([`CHAIN_SLOTS`] slots, allocated at first use).
    chain_memo: Vec<ChainMemo>,
    /// The id of the last sample's chain when it came from the chain memo, and the next id to hand out.
    last_chain: Option<u32>,
    next_chain_id: u32,
    /// Kernel frames are handed out as [`FrameRef::Kernel`], for a consumer that symbolizes them itself.
    defer_kernel: bool,
    /// Frames of one address before they enter the cache, and frame references of one sample: buffers kept
    /// for their allocations.
    scratch: Vec<Frame>,
    refs_buf: Vec<FrameRef>,
    /// When `Some`, [`Resolver::frame_refs_into`] records the address of every frame it hands out here (the
    /// address perf's callchain cursor holds: raw, or `return address − 1` for a DWARF-unwound caller), for
    /// `report`, which names unresolved callchain entries by it. `None` for `script`, which does not need it.
    frame_addresses: Option<Vec<u64>>,
}

impl<L: FileLookup> Resolver<L> {
    /// A resolver over `symbolizer`.
    pub fn new(symbolizer: Symbolizer<L>, options: &Options) -> Self {
        Resolver {
            symbolizer,
            build_ids: HashMap::new(),
            kernel_build_id: None,
            max_stack: options.max_stack,
            inline_cache: IdMap::default(),
            map_dsos: IdMap::default(),
            unwind_tables: IdMap::default(),
            kernel: None,
            modules: IdMap::default(),
            frame_cache: IdMap::default(),
            frame_arena: Vec::new(),
            chain_buf: Vec::new(),
            unwind_buf: Vec::new(),
            last_modules: None,
            unwindable: IdMap::default(),
            memo: Vec::new(),
            chain_memo: Vec::new(),
            last_chain: None,
            next_chain_id: 0,
            defer_kernel: false,
            scratch: Vec::new(),
            frame_addresses: None,
            refs_buf: Vec::new(),
        }
    }

    fn dso_for(&mut self, map: &Map) -> Rc<crate::perf::symbols::Dso> {
        if let Some(d) = self.map_dsos.get(&map.id) {
            return d.clone();
        }
        let bid = self.build_id_for(map);
        let dso = self.symbolizer.dso(&map.dso, bid.as_deref());
        self.map_dsos.insert(map.id, dso.clone());
        dso
    }

    /// Whether perf 6.1 unwinds this process's DWARF samples at all. Its libunwind address space is made when
    /// a map whose DSO it can read (`dso__type` known) joins the process (unwind-libunwind.c
    /// `unwind__prepare_access`); with none, `unwind__get_entries` returns early and the sample's user chain is
    /// empty, its IP included. That is every DWARF sample of a file from another machine whose DSOs are not
    /// here (perf prints no frame there, not `[unknown] (ld-2.17.so)`).
    fn unwindable(&mut self, machine: &Machine, pid: i32, ip: u64) -> bool {
        let generation = machine.generation();
        match self.unwindable.get(&pid) {
            Some(&(true, _)) => return true,
            Some(&(false, seen)) if seen == generation => return false,
            _ => {}
        }
        let maps: Vec<Rc<Map>> = match machine.user_maps(pid) {
            // The IP's own map first: the common case, and one DSO load.
            Some(maps) => maps
                .find(ip)
                .into_iter()
                .chain(maps.iter())
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        let found = maps
            .iter()
            .any(|m| m.kind == MapKind::File && self.dso_for(m).info.is_some());
        self.unwindable.insert(pid, (found, generation));
        found
    }

    fn build_id_for(&self, map: &Map) -> Option<Vec<u8>> {
        map.build_id
            .clone()
            .or_else(|| self.build_ids.get(&*map.dso).cloned())
    }

    /// The frames of one sample, innermost first, as `perf script` prints them.
    pub fn frames(
        &mut self,
        machine: &Machine,
        mode: CallchainMode,
        s: &SampleInput<'_>,
    ) -> Vec<Frame> {
        let mut out = Vec::new();
        self.frames_into(machine, mode, s, &mut out);
        out
    }

    /// [`Resolver::frames`] into `out` (cleared first), a buffer the caller reuses across samples.
    pub fn frames_into(
        &mut self,
        machine: &Machine,
        mode: CallchainMode,
        s: &SampleInput<'_>,
        out: &mut Vec<Frame>,
    ) {
        let mut refs = std::mem::take(&mut self.refs_buf);
        self.frame_refs_into(machine, mode, s, &mut refs);
        self.materialize_into(&mut refs, out);
        self.refs_buf = refs;
    }

    /// When the frames [`Resolver::frame_refs_into`] gave last are a chain seen before, its id: the same id
    /// always stands for the same frames (ids are not reused in a run), so a consumer may keep the chain's
    /// text by it. `None` for a chain met for the first time, or with kernel or uncached frames.
    pub fn last_chain(&self) -> Option<u32> {
        self.last_chain
    }

    /// The frames of the cache, indexed by [`FrameRef::Cached`].
    pub fn cached_frames(&self) -> &[Frame] {
        &self.frame_arena
    }

    /// From now on, kernel frames of [`Resolver::frame_refs_into`] are [`FrameRef::Kernel`]: the script's output
    /// thread symbolizes them, so the resolving thread never waits for the kernel's symbol table.
    pub fn defer_kernel_symbols(&mut self) {
        self.defer_kernel = true;
    }

    /// `refs` (emptied) as frames in `out` (cleared first).
    pub fn materialize_into(&mut self, refs: &mut Vec<FrameRef>, out: &mut Vec<Frame>) {
        out.clear();
        for r in refs.drain(..) {
            let f = self.materialize(r);
            out.push(f);
        }
    }

    /// A [`FrameRef`] as a [`Frame`] (a deferred kernel frame is symbolized here).
    pub fn materialize(&mut self, r: FrameRef) -> Frame {
        match r {
            FrameRef::Cached(i) => self.frame_arena[i as usize].clone(),
            FrameRef::Owned(f) => f,
            FrameRef::Kernel { addr, dso, .. } => {
                let sym = self.kernel_symbol(addr);
                let (sym, offset) = match sym {
                    Some((name, off)) => (Some(name), off),
                    None => (None, 0),
                };
                Frame {
                    addr,
                    sym,
                    offset,
                    dso: Some(dso),
                    inlined: false,
                }
            }
        }
    }

    /// The kernel symbol containing `avma` and the offset into it.
    fn kernel_symbol(&mut self, avma: u64) -> Option<(Rc<str>, u64)> {
        let k = match &self.kernel {
            Some(k) => k.clone(),
            None => {
                let bid = self.kernel_build_id.clone();
                let k = self.symbolizer.kernel(bid.as_deref());
                self.kernel = Some(k.clone());
                k
            }
        };
        k.lookup_start(avma)
            .map(|(name, start)| (name, avma - start))
    }

    /// [`Resolver::frames_into`] as references into the frame cache (see [`FrameRef`]).
    pub fn frame_refs_into(
        &mut self,
        machine: &Machine,
        mode: CallchainMode,
        s: &SampleInput<'_>,
        out: &mut Vec<FrameRef>,
    ) {
        out.clear();
        let sample_context = context_of_cpumode(s.cpumode);
        let mut chain = std::mem::take(&mut self.chain_buf);
        self.chain_addresses(machine, mode, s, sample_context, &mut chain);
        out.reserve(chain.len());
        self.last_chain = None;
        if let Some(a) = &mut self.frame_addresses {
            a.clear();
        }
        let generation = machine.generation();
        let slot = chain_slot(s.pid, &chain);
        let key = ChainKey {
            mode,
            pid: s.pid,
            generation,
            sample_context,
        };
        if !self.replay_chain(slot, &key, &chain, out) {
            self.resolve_chain(machine, mode, s.pid, sample_context, &chain, out);
            self.remember_chain(slot, &key, &chain, out);
        }
        self.chain_buf = chain;
    }

    /// The addresses of a sample's chain, into `chain` (cleared first), as the callchain mode reads them.
    #[inline]
    fn chain_addresses(
        &mut self,
        machine: &Machine,
        mode: CallchainMode,
        s: &SampleInput<'_>,
        sample_context: Context,
        chain: &mut Vec<ChainFrame>,
    ) {
        chain.clear();
        match mode {
            CallchainMode::Fp => match &s.callchain {
                Some(c) => fp::parse_callchain_into(c, self.max_stack, chain),
                None => chain.push(ChainFrame {
                    addr: FrameAddress::InstructionPointer(s.ip),
                    context: Some(sample_context),
                }),
            },
            CallchainMode::Lbr => {
                let c = s.callchain.as_deref().unwrap_or(&[]);
                match lbr::stitch(c, &s.branches, self.max_stack) {
                    Some(stitched) => chain.extend(stitched),
                    None => fp::parse_callchain_into(c, self.max_stack, chain),
                }
            }
            CallchainMode::Dwarf => {
                // Kernel part from the kernel's callchain (user part excluded at record time), then the user
                // stack unwound: perf's thread__resolve_callchain_sample followed by ..._unwind.
                if let Some(c) = &s.callchain {
                    fp::parse_callchain_into(c, self.max_stack, chain);
                }
                let mut user = std::mem::take(&mut self.unwind_buf);
                self.unwind_user(
                    machine,
                    s,
                    self.max_stack.saturating_sub(chain.len()),
                    &mut user,
                );
                chain.extend(user.iter().map(|&addr| ChainFrame {
                    addr,
                    context: Some(Context::User),
                }));
                self.unwind_buf = user;
            }
        }
    }

    /// The frames of a chain remembered in `slot` under the same key, into `out`; false when none is.
    #[inline]
    fn replay_chain(
        &mut self,
        slot: usize,
        key: &ChainKey,
        chain: &[ChainFrame],
        out: &mut Vec<FrameRef>,
    ) -> bool {
        // A remembered chain holds frame ids only, not the address each came from.
        if self.frame_addresses.is_some() {
            return false;
        }
        let Some(m) = self.chain_memo.get_mut(slot) else {
            return false;
        };
        if !(m.mode == Some(key.mode)
            && m.pid == key.pid
            && m.generation == key.generation
            && m.sample_context == Some(key.sample_context)
            && m.chain == chain)
        {
            return false;
        }
        out.extend(m.ids.iter().map(|&id| FrameRef::Cached(id)));
        if m.id.is_none() && self.next_chain_id < MAX_CHAIN_IDS {
            m.id = Some(self.next_chain_id);
            self.next_chain_id += 1;
        }
        self.last_chain = m.id;
        true
    }

    /// Resolves every address of `chain` into `out`, noting each frame's address when asked to.
    #[inline]
    fn resolve_chain(
        &mut self,
        machine: &Machine,
        mode: CallchainMode,
        pid: i32,
        sample_context: Context,
        chain: &[ChainFrame],
        out: &mut Vec<FrameRef>,
    ) {
        let user_maps = machine.user_maps(pid);
        for f in chain {
            let before = out.len();
            let context = f.context.unwrap_or(sample_context);
            self.frame(out, machine, user_maps, pid, context, f.addr, mode);
            if let Some(a) = &mut self.frame_addresses {
                let avma = Self::avma(mode, context, f.addr);
                a.resize(a.len() + out.len() - before, avma);
            }
        }
    }

    /// Remembers the resolved chain in `slot` when all its frames are cached ones.
    #[inline]
    fn remember_chain(
        &mut self,
        slot: usize,
        key: &ChainKey,
        chain: &[ChainFrame],
        out: &[FrameRef],
    ) {
        // Only chains of cached frames are remembered: the others hold frames of their own (unmapped
        // addresses, JIT maps) or kernel frames for the output thread.
        if !out.iter().all(|r| matches!(r, FrameRef::Cached(_))) {
            return;
        }
        if self.chain_memo.is_empty() {
            self.chain_memo.resize_with(CHAIN_SLOTS, ChainMemo::default);
        }
        let m = &mut self.chain_memo[slot];
        m.pid = key.pid;
        m.generation = key.generation;
        m.mode = Some(key.mode);
        m.sample_context = Some(key.sample_context);
        m.chain.clear();
        m.chain.extend_from_slice(chain);
        m.ids.clear();
        m.ids.extend(out.iter().filter_map(|r| match r {
            FrameRef::Cached(id) => Some(*id),
            _ => None,
        }));
        m.id = None;
    }

    /// The user frames of a DWARF sample, into `frames` (cleared first).
    fn unwind_user(
        &mut self,
        machine: &Machine,
        s: &SampleInput<'_>,
        max: usize,
        frames: &mut Vec<FrameAddress>,
    ) {
        frames.clear();
        let Some((mask, values)) = &s.regs_user else {
            return;
        };
        let Some(regs) = RegsX86_64::from_perf_regs(*mask, values) else {
            return;
        };
        if s.stack_user.is_empty() || max == 0 {
            return;
        }
        if !self.unwindable(machine, s.pid, regs.ip) {
            return;
        }
        // perf's libunwind memory accessor (unwind-libunwind-local.c `access_mem`) refuses a word that ends exactly
        // at the end of the copy (`addr + 8 >= end`), so perf's chain stops one word early there; bport reads the
        // copy the same way, for the same frames.
        let stack = StackSnapshot {
            start: regs.sp,
            bytes: &s.stack_user[..s.stack_user.len() - 1],
        };
        // Load every DSO the walk may need first, so the lookup closure can borrow them immutably.
        // Start from the modules this process needed last time.
        let generation = machine.generation();
        let mut dsos = self.take_modules(machine, s.pid);
        // Unwind incrementally: each pass may discover a caller in a DSO not yet loaded.
        loop {
            let before = dsos.len();
            let mut missing = None;
            let mut lookup = |avma: u64| -> Option<Module<'_>> {
                let found = dsos
                    .iter()
                    .find(|(m, _, _)| m.start <= avma && avma < m.end)
                    .and_then(|(m, d, bias)| {
                        Some(Module {
                            avma_range: m.start..m.end,
                            bias: (*bias)?,
                            unwind: d.get()?,
                        })
                    });
                if found.is_none() && missing.is_none() {
                    missing = Some(avma);
                }
                found
            };
            let stop = dwarf::unwind_into(
                regs,
                &stack,
                &mut lookup,
                &UnwindOptions { max_frames: max },
                frames,
            );
            let done = match missing {
                Some(avma) => {
                    self.add_module(machine, s.pid, avma, &mut dsos);
                    dsos.len() == before
                }
                None => true,
            };
            if done {
                self.last_modules = Some((s.pid, generation, dsos));
                // Where the next return address lies beyond the stack copy, perf's libunwind still reports one
                // more frame, whose IP reads as all ones: perf prints `ffffffffffffffff [unknown] ([unknown])`,
                // and so does bport (the line marks a chain cut short by the stack-copy size). Any other
                // register saved beyond the copy (RBP in an epilogue) ends perf's chain without that line.
                if matches!(stop, StopReason::ReturnAddressOutsideStack { .. })
                    && frames.len() < max
                {
                    frames.push(FrameAddress::InstructionPointer(u64::MAX));
                }
                return;
            }
        }
    }

    /// The modules this process's unwinding needed last time, dropping any whose map was replaced since
    /// (checked only when some map changed).
    fn take_modules(&mut self, machine: &Machine, pid: i32) -> Vec<MapDso> {
        let (seen, mut dsos) = match self.last_modules.take() {
            Some((last, seen, dsos)) if last == pid => (seen, dsos),
            other => {
                if let Some((last, seen, dsos)) = other {
                    self.modules.insert(last, (seen, dsos));
                }
                self.modules.remove(&pid).unwrap_or_default()
            }
        };
        if seen != machine.generation() {
            dsos.retain(|(m, _, _)| {
                machine
                    .user_map(pid, m.start)
                    .is_some_and(|now| now.id == m.id)
            });
        }
        dsos
    }

    /// Adds to `dsos` the file-backed module mapped at `avma`, unless one there is known already or none is.
    fn add_module(&mut self, machine: &Machine, pid: i32, avma: u64, dsos: &mut Vec<MapDso>) {
        let known = dsos.iter().any(|(m, _, _)| m.start <= avma && avma < m.end);
        let Some(map) = machine.user_map(pid, avma).filter(|_| !known) else {
            return;
        };
        if map.kind != MapKind::File {
            return;
        }
        let dso = self.dso_for(map);
        let bias = dso.bias(map.start, map.pgoff);
        let tables = self
            .unwind_tables
            .entry(Rc::as_ptr(&dso) as usize)
            .or_insert_with(|| {
                Rc::new(UnwindTables {
                    dso: dso.clone(),
                    tables: std::cell::OnceCell::new(),
                })
            })
            .clone();
        dsos.push((map.clone(), tables, bias));
    }

    /// Resolves one address into `out`: its map, the printed address, the symbol and the DSO name; several
    /// frames when perf would show inlined functions at it.
    #[allow(clippy::too_many_arguments)]
    fn frame(
        &mut self,
        out: &mut Vec<FrameRef>,
        machine: &Machine,
        user_maps: Option<&Maps>,
        pid: i32,
        context: Context,
        addr: FrameAddress,
        mode: CallchainMode,
    ) {
        let avma = Self::avma(mode, context, addr);
        let kernel = matches!(
            context,
            Context::Kernel | Context::GuestKernel | Context::Hypervisor
        );
        let inline_frames = mode == CallchainMode::Dwarf && context == Context::User;
        // The memo answers a repeated address without the map search and the cache's hashing; an entry holds
        // while no map anywhere changed (the machine's generation).
        let flags = u8::from(kernel) | u8::from(inline_frames) << 1;
        let generation = machine.generation();
        let slot = memo_slot(pid, avma);
        if let Some(m) = self.memo.get(slot) {
            if m.valid
                && m.avma == avma
                && m.pid == pid
                && m.flags == flags
                && m.generation == generation
            {
                push_cached(out, m.start, m.len);
                return;
            }
        }
        let map = if kernel {
            machine.kernel_map(avma)
        } else {
            user_maps.and_then(|m| m.find(avma))
        };
        let Some(map) = map else {
            out.push(FrameRef::Owned(Frame {
                addr: avma,
                sym: None,
                offset: 0,
                dso: None,
                inlined: false,
            }));
            return;
        };
        if self.defer_kernel && map.kind == MapKind::Kernel {
            out.push(FrameRef::Kernel {
                map: map.id,
                addr: avma,
                dso: map.dso.clone(),
            });
            return;
        }
        let key = (map.id, avma, inline_frames);
        let cacheable = map.kind != MapKind::Anon;
        let memo = |start: u32, len: u32| Memo {
            valid: true,
            avma,
            pid,
            flags,
            generation,
            start,
            len,
        };
        if cacheable {
            if let Some(&(start, len)) = self.frame_cache.get(&key) {
                self.remember(slot, memo(start, len));
                push_cached(out, start, len);
                return;
            }
        }
        let mut frames = std::mem::take(&mut self.scratch);
        frames.clear();
        self.resolve_uncached(&mut frames, map, pid, avma, inline_frames);
        let span = (
            u32::try_from(self.frame_arena.len()),
            u32::try_from(frames.len()),
        );
        match span {
            (Ok(start), Ok(len)) if cacheable && start.checked_add(len).is_some() => {
                self.frame_arena.append(&mut frames);
                self.frame_cache.insert(key, (start, len));
                self.remember(slot, memo(start, len));
                push_cached(out, start, len);
            }
            _ => out.extend(frames.drain(..).map(FrameRef::Owned)),
        }
        self.scratch = frames;
    }

    /// The address a frame is looked up and printed at.
    fn avma(mode: CallchainMode, context: Context, addr: FrameAddress) -> u64 {
        // perf's DWARF unwinders already report callers at `return address − 1` and print that; the kernel's
        // callchain (fp) and LBR addresses are printed and looked up as they are.
        match mode {
            CallchainMode::Dwarf if context == Context::User => addr.lookup_address(),
            _ => addr.address(),
        }
    }

    /// From now on, record the address of every frame [`Resolver::frame_refs_into`] hands out
    /// ([`Resolver::frame_addresses`]).
    pub fn track_frame_addresses(&mut self) {
        self.frame_addresses.get_or_insert_with(Vec::new);
    }

    /// The address of each frame the last [`Resolver::frame_refs_into`] gave, when tracked (else empty).
    pub fn frame_addresses(&self) -> &[u64] {
        self.frame_addresses.as_deref().unwrap_or_default()
    }

    fn remember(&mut self, slot: usize, memo: Memo) {
        if self.memo.is_empty() {
            self.memo = vec![Memo::default(); MEMO_SLOTS];
        }
        self.memo[slot] = memo;
    }

    /// [`Resolver::frame`] for an address in `map`, without the cache.
    fn resolve_uncached(
        &mut self,
        out: &mut Vec<Frame>,
        map: &Map,
        pid: i32,
        avma: u64,
        inline_frames: bool,
    ) {
        let printed = map.map_ip(avma);
        let sym = match map.kind {
            MapKind::Kernel => self.kernel_symbol(avma),
            MapKind::NoDso => None,
            MapKind::Anon => self
                .symbolizer
                .perf_map(pid as u32)
                .and_then(|m| m.lookup(avma))
                .map(|(start, name)| (name.clone(), avma - start)),
            MapKind::File => {
                let dso = self.dso_for(map);
                let info = dso.info.as_ref();
                let svma = info.and_then(|i| i.file_offset_to_svma(printed));
                let hit = svma
                    .and_then(|svma| dso.symbolize(svma))
                    .map(|h| (h.name.clone(), h.offset));
                // perf 6.1 without libbfd runs addr2line -f -i on every DWARF-unwound frame (unwind_entry →
                // append_inlines) and shows each function it reports at the address as a frame, `(inlined)`
                // when its name differs from perf's own symbol: inline chains from DWARF, or, in files
                // without debug information, the symbol bfd prefers among aliases.
                // srcline.c `dso__name`: no addr2line for pseudo files (`[vdso]`) and JIT maps.
                let wants_inline = inline_frames
                    && !map.dso.starts_with('[')
                    && !map.dso.starts_with("/tmp/perf-");
                if let (Some((name, off)), Some(svma), true) = (&hit, svma, wants_inline) {
                    // The symbolizer keeps every Dso alive for the run, so its address is a stable key.
                    let key = (Rc::as_ptr(&dso) as usize, svma);
                    let names = match self.inline_cache.get(&key) {
                        Some(n) => n.clone(),
                        None => {
                            // GNU addr2line answers from DWARF when it covers the address, else from symbols.
                            let from_symbols = || {
                                info.and_then(|i| i.addr2line_function(svma))
                                    .map(std::borrow::Cow::into_owned)
                            };
                            let raw: Option<Vec<String>> = match dso.inline_names(svma) {
                                Some(names) => Some(
                                    names
                                        .into_iter()
                                        .map(|n| {
                                            n.or_else(from_symbols)
                                                .unwrap_or_else(|| "??".to_owned())
                                        })
                                        .collect(),
                                ),
                                None => from_symbols().map(|n| vec![n]),
                            };
                            let demangle = self.symbolizer.options().demangle;
                            let names: Rc<[Rc<str>]> = raw
                                .unwrap_or_default()
                                .into_iter()
                                .map(|n| {
                                    Rc::from(if demangle {
                                        crate::perf::symbols::demangle::demangle(&n)
                                    } else {
                                        n
                                    })
                                })
                                .collect();
                            self.inline_cache.insert(key, names.clone());
                            names
                        }
                    };
                    if !names.is_empty() {
                        for n in names.iter() {
                            let inlined = **n != **name;
                            out.push(Frame {
                                addr: printed,
                                sym: Some(if inlined { n.clone() } else { name.clone() }),
                                offset: *off,
                                dso: Some(map.dso.clone()),
                                inlined,
                            });
                        }
                        return;
                    }
                }
                hit
            }
        };
        let (sym, offset) = match sym {
            Some((name, off)) => (Some(name), off),
            None => (None, 0),
        };
        out.push(Frame {
            addr: printed,
            sym,
            offset,
            dso: Some(map.dso.clone()),
            inlined: false,
        });
    }
}

/// The context a sample's cpumode stands for, for callchain entries before any marker.
pub fn context_of_cpumode(cpumode: u16) -> Context {
    match cpumode {
        MISC_KERNEL => Context::Kernel,
        MISC_HYPERVISOR => Context::Hypervisor,
        MISC_GUEST_KERNEL => Context::GuestKernel,
        MISC_GUEST_USER => Context::GuestUser,
        _ => Context::User,
    }
}
