//! DWARF CFI unwinding (x86_64) over `.eh_frame` (indexed by `.eh_frame_hdr` when present) and `.debug_frame`
//! (also from a separate debug file), with gimli.
//!
//! [`UnwindInfo`] is built once per DSO and caches, per lookup address, the unwind rule it evaluated, so a hot
//! loop sampled ten thousand times costs one CFI evaluation. [`unwind`] is a pure function of registers, the
//! stack snapshot and a module lookup.
//!
//! Conventions follow perf's DWARF unwinders (tools/perf/util/unwind-libunwind-local.c, unwind-libdw.c): the first
//! frame is the sampled IP; each caller is a return address read at the CFA-relative slot the CFI names; the walk
//! stops where the return address is undefined (`_start`), zero, outside the captured stack, or where the stack
//! pointer stops growing. All sixteen general registers travel from frame to frame (a CFA may be based on any of
//! them, as RBX in glibc's lazy-binding resolver); one that is unknown stops only a step that needs it. Above a
//! signal trampoline (CIE augmentation `S`, glibc's `__restore_rt`) the interrupted code's frame is an
//! [`FrameAddress::InstructionPointer`], as perf prints it.

use super::{FrameAddress, ModuleLookup, RegsX86_64, StackSnapshot, StopReason, Unwound};
use gimli::{
    BaseAddresses, CfaRule, DebugFrame, EhFrame, EhFrameHdr, EndianSlice, LittleEndian,
    RegisterRule, UnwindContext, UnwindExpression, UnwindSection,
};
use object::{Object, ObjectSection};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// DWARF register numbers of the x86_64 psABI.
const RBP: u16 = RegsX86_64::DWARF_RBP;
const RSP: u16 = RegsX86_64::DWARF_RSP;
const RA: u16 = RegsX86_64::DWARF_RA;
/// How many DWARF registers a [`Rule`] describes (0–15 and the return address).
const NREGS: usize = RegsX86_64::DWARF_REGS as usize;

/// Why unwind information could not be loaded from a file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnwindInfoError {
    /// The bytes are not an ELF file object can parse.
    #[error("not a readable ELF file: {0}")]
    Elf(#[from] object::Error),
}

/// One unwind section's bytes and the svma it is loaded at.
#[derive(Clone, Debug, Default)]
struct Section {
    svma: u64,
    data: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    EhFrame,
    DebugFrame,
}

/// One FDE in the address index.
#[derive(Clone, Copy, Debug)]
struct IndexEntry {
    start: u64,
    source: Source,
    offset: usize,
}

/// How to find a register's value in the caller, reduced from a gimli row to what x86_64 needs. Offsets are
/// i32 (CFI offsets are frame sizes; a larger one is [`RegRule::Unsupported`]), keeping this at 8 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RegRule {
    Undefined,
    SameValue,
    /// Saved at CFA + offset.
    AtCfa(i32),
    /// Equal to CFA + offset.
    ValCfa(i32),
    /// Equal to this frame's value of another DWARF register.
    Register(u16),
    /// Saved at the address a DWARF expression computes with the CFA pushed first (signal trampolines such as
    /// glibc's `__restore_rt`, which point every register into the saved `ucontext`).
    AtExpr(ExprId),
    /// Equal to the value a DWARF expression computes with the CFA pushed first.
    ValExpr(ExprId),
    /// A rule this unwinder does not evaluate: the register becomes unknown, which stops only a later step
    /// that needs it.
    Unsupported,
}

/// A register rule's DWARF expression: an index into [`UnwindInfo`]'s expression table, which keeps
/// [`RegRule`] at 8 bytes (the step indexes rules by register on every frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ExprId(u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CfaRuleX86 {
    /// DWARF register + offset: RSP or RBP from compilers, RBX in glibc's `_dl_runtime_resolve_*`.
    RegPlus { reg: u16, offset: i64 },
    /// A DWARF expression (the PLT's `rsp + 8 + ((rip & 15) >= 11) * 8`, signal frames); evaluated per use.
    Expression {
        source: Source,
        expr: UnwindExpression<usize>,
        address_size: u8,
    },
}

/// A cached unwind rule for one address: the CFA and, per DWARF register 0–16, how to find its caller value.
///
/// Registers the CFI says nothing about keep their value ("same value"), caller-saved ones included, as in
/// libunwind (perf's unwinder), whose register state starts every column at "same value". A caller-saved
/// register is thereby wrong in callers, but no compiler-emitted rule reads one; hand-written code that does
/// (the lazy-binding resolver) saves it with an explicit rule. The return address column defaults to undefined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rule {
    cfa: CfaRuleX86,
    regs: [RegRule; NREGS],
    /// Bit n set: `regs[n]` is not [`RegRule::SameValue`]; a step visits only these.
    changed: u32,
    /// Some rule reads the callee's registers ([`RegRule::Register`], expressions): the step must read them
    /// from a copy instead of the registers it updates in place.
    copies: bool,
    /// The FDE's CIE has the `S` augmentation: this frame is a signal trampoline, and its caller's address is
    /// the interrupted instruction itself, not a return address.
    signal: bool,
}

impl Rule {
    fn new(cfa: CfaRuleX86) -> Self {
        let mut rule = Rule {
            cfa,
            regs: [RegRule::SameValue; NREGS],
            changed: 0,
            copies: false,
            signal: false,
        };
        rule.set(RA, RegRule::Undefined);
        rule
    }

    fn set(&mut self, r: u16, rule: RegRule) {
        if let Some(slot) = self.regs.get_mut(usize::from(r)) {
            *slot = rule;
            if rule == RegRule::SameValue {
                self.changed &= !(1 << r);
            } else {
                self.changed |= 1 << r;
            }
        }
    }

    fn reg(&self, r: u16) -> RegRule {
        self.regs[usize::from(r)]
    }
}

/// What a cache slot remembers for one address: `None` when no FDE covers it.
type Cached = Option<Result<Rule, String>>;

/// A multiplicative hasher for the rule cache's u64 keys: SipHash's flood resistance buys nothing for addresses
/// from our own samples and costs a good part of a cache hit.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        // Fibonacci hashing; folding the high half down lets the low bits (hashbrown's bucket index) depend on
        // every bit of the address.
        let h = (self.0 ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }
}

type AddrMap<V> = HashMap<u64, V, BuildHasherDefault<AddrHasher>>;

/// The unwind tables of one DSO, parsed once, with a per-address rule cache.
///
/// Addresses given to it are svmas (addresses as stated in the ELF file).
#[derive(Debug, Default)]
pub struct UnwindInfo {
    eh_frame: Option<Section>,
    debug_frame: Option<Section>,
    text_svma: u64,
    got_svma: u64,
    /// Sorted by `start`; a lookup takes the last entry starting at or below the address and checks its end.
    index: Vec<IndexEntry>,
    cache: RefCell<AddrMap<Cached>>,
    ctx: RefCell<UnwindContext<usize>>,
    /// The expressions register rules refer to ([`ExprId`]), in the section they come from.
    exprs: RefCell<Vec<(Source, UnwindExpression<usize>)>>,
}

impl UnwindInfo {
    /// Reads `.eh_frame`, `.eh_frame_hdr` and `.debug_frame` from an ELF image.
    pub fn from_elf(data: &[u8]) -> Result<Self, UnwindInfoError> {
        let file = object::File::parse(data)?;
        let section = |name: &str| -> Option<Section> {
            let s = file.section_by_name(name)?;
            // A SHT_NOBITS section (stripped into a debug file) has no bytes here.
            let bytes = s.data().ok().filter(|d| !d.is_empty())?;
            Some(Section {
                svma: s.address(),
                data: bytes.to_vec(),
            })
        };
        let eh_frame = section(".eh_frame");
        let eh_frame_hdr = section(".eh_frame_hdr");
        let debug_frame = section(".debug_frame");
        let text_svma = file.section_by_name(".text").map_or(0, |s| s.address());
        let got_svma = file.section_by_name(".got").map_or(0, |s| s.address());
        Ok(Self::from_sections(
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            text_svma,
            got_svma,
        ))
    }

    /// Adds the `.debug_frame` of a separate debug file (found by build-id or `.gnu_debuglink`), for DSOs whose
    /// own file carries no CFI for some code.
    pub fn add_debug_file(&mut self, debug_file: &[u8]) -> Result<(), UnwindInfoError> {
        let file = object::File::parse(debug_file)?;
        if let Some(s) = file.section_by_name(".debug_frame") {
            if let Ok(bytes) = s.data() {
                if !bytes.is_empty() && self.debug_frame.is_none() {
                    self.debug_frame = Some(Section {
                        svma: s.address(),
                        data: bytes.to_vec(),
                    });
                    self.rebuild_index(None);
                }
            }
        }
        Ok(())
    }

    fn from_sections(
        eh_frame: Option<Section>,
        eh_frame_hdr: Option<Section>,
        debug_frame: Option<Section>,
        text_svma: u64,
        got_svma: u64,
    ) -> Self {
        let mut info = UnwindInfo {
            eh_frame,
            debug_frame,
            text_svma,
            got_svma,
            ..Default::default()
        };
        info.rebuild_index(eh_frame_hdr.as_ref());
        info
    }

    /// Whether any unwind table was found.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    fn bases(&self) -> BaseAddresses {
        let mut bases = BaseAddresses::default()
            .set_text(self.text_svma)
            .set_got(self.got_svma);
        if let Some(eh) = &self.eh_frame {
            bases = bases.set_eh_frame(eh.svma);
        }
        bases
    }

    fn eh(&self) -> Option<EhFrame<EndianSlice<'_, LittleEndian>>> {
        let s = self.eh_frame.as_ref()?;
        let mut eh = EhFrame::new(&s.data, LittleEndian);
        eh.set_address_size(8);
        Some(eh)
    }

    fn debug(&self) -> Option<DebugFrame<EndianSlice<'_, LittleEndian>>> {
        let s = self.debug_frame.as_ref()?;
        let mut df = DebugFrame::new(&s.data, LittleEndian);
        df.set_address_size(8);
        Some(df)
    }

    /// Builds the sorted FDE index: from `.eh_frame_hdr`'s binary-search table when there is one (no FDE needs
    /// parsing), else by walking every entry once (static executables linked without `--eh-frame-hdr`).
    fn rebuild_index(&mut self, hdr: Option<&Section>) {
        let mut index = Vec::new();
        let bases = self.bases();
        let mut from_hdr = false;
        if let (Some(hdr), Some(eh)) = (hdr, &self.eh_frame) {
            let hdr_bases = bases.clone().set_eh_frame_hdr(hdr.svma);
            if let Ok(parsed) = EhFrameHdr::new(&hdr.data, LittleEndian).parse(&hdr_bases, 8) {
                if let Some(table) = parsed.table() {
                    let mut iter = table.iter(&hdr_bases);
                    let mut ok = true;
                    let mut entries = Vec::new();
                    loop {
                        match iter.next() {
                            Ok(Some((start, fde))) => {
                                let (Ok(start), Ok(fde)) = (start.direct(), fde.direct()) else {
                                    ok = false;
                                    break;
                                };
                                let Some(offset) = fde
                                    .checked_sub(eh.svma)
                                    .and_then(|o| usize::try_from(o).ok())
                                else {
                                    ok = false;
                                    break;
                                };
                                entries.push(IndexEntry {
                                    start,
                                    source: Source::EhFrame,
                                    offset,
                                });
                            }
                            Ok(None) => break,
                            Err(_) => {
                                ok = false;
                                break;
                            }
                        }
                    }
                    if ok {
                        index = entries;
                        from_hdr = true;
                    }
                }
            }
        }
        if !from_hdr {
            if let Some(eh) = self.eh() {
                scan(&eh, &bases, Source::EhFrame, &mut index);
            }
        }
        if let Some(df) = self.debug() {
            scan(&df, &bases, Source::DebugFrame, &mut index);
        }
        // Stable: for equal starts .eh_frame entries (pushed first) win, as in libunwind's search order.
        index.sort_by_key(|e| e.start);
        self.index = index;
        self.cache.borrow_mut().clear();
        self.exprs.borrow_mut().clear();
    }

    /// Runs `f` on the cached unwind rule at `svma`, computing it on a miss (misses are cached too: code without
    /// CFI is sampled as often as any other). `f` borrows the rule, so a hit copies nothing.
    fn with_rule<R>(&self, svma: u64, f: impl FnOnce(&Cached) -> R) -> R {
        if let Some(hit) = self.cache.borrow().get(&svma) {
            return f(hit);
        }
        let computed = self.compute_rule(svma);
        let result = f(&computed);
        self.cache.borrow_mut().insert(svma, computed);
        result
    }

    /// The unwind rule at `svma` (a copy, for tests).
    #[cfg(test)]
    fn rule_at(&self, svma: u64) -> Cached {
        self.with_rule(svma, Clone::clone)
    }

    /// `None` when no FDE covers `svma`.
    fn compute_rule(&self, svma: u64) -> Option<Result<Rule, String>> {
        let pos = self.index.partition_point(|e| e.start <= svma);
        // Try the candidates starting at or below svma, nearest first; FDEs do not overlap in sane files, so the
        // first that contains svma decides. Two candidates cover a .eh_frame/.debug_frame pair for one function.
        for entry in self.index[..pos].iter().rev().take(2) {
            let bases = self.bases();
            let result = match entry.source {
                Source::EhFrame => {
                    let eh = self.eh()?;
                    self.row_rule(&eh, &bases, entry, svma, Source::EhFrame)
                }
                Source::DebugFrame => {
                    let df = self.debug()?;
                    self.row_rule(&df, &bases, entry, svma, Source::DebugFrame)
                }
            };
            match result {
                Some(r) => return Some(r),
                None => continue,
            }
        }
        None
    }

    fn row_rule<'s, S>(
        &self,
        section: &S,
        bases: &BaseAddresses,
        entry: &IndexEntry,
        svma: u64,
        source: Source,
    ) -> Option<Result<Rule, String>>
    where
        S: UnwindSection<EndianSlice<'s, LittleEndian>>,
        S::Offset: From<usize>,
    {
        let fde = match section.fde_from_offset(bases, entry.offset.into(), S::cie_from_offset) {
            Ok(fde) => fde,
            Err(e) => return Some(Err(format!("bad FDE at offset {:#x}: {e}", entry.offset))),
        };
        if !fde.contains(svma) {
            return None;
        }
        let mut ctx = self.ctx.borrow_mut();
        let row = match fde.unwind_info_for_address(section, bases, &mut ctx, svma) {
            Ok(row) => row,
            Err(gimli::Error::NoUnwindInfoForAddress) => return None,
            Err(e) => return Some(Err(format!("bad CFI for {svma:#x}: {e}"))),
        };
        let address_size = fde.cie().address_size();
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } if register.0 < RA => {
                CfaRuleX86::RegPlus {
                    reg: register.0,
                    offset: *offset,
                }
            }
            CfaRule::RegisterAndOffset { register, .. } => {
                return Some(Err(format!(
                    "CFA based on DWARF register {} at {svma:#x}, which is not an x86_64 general register",
                    register.0
                )))
            }
            CfaRule::Expression(expr) => CfaRuleX86::Expression {
                source,
                expr: *expr,
                address_size,
            },
        };
        let mut rule = Rule::new(cfa);
        for (register, r) in row.registers() {
            // RSP is always the CFA (psABI); columns past RA (vector registers) are not tracked.
            if register.0 == RSP || usize::from(register.0) >= NREGS {
                continue;
            }
            let offset = |o: i64| i32::try_from(o).ok();
            let reg_rule = match r {
                RegisterRule::Undefined => RegRule::Undefined,
                RegisterRule::SameValue => RegRule::SameValue,
                RegisterRule::Offset(o) => offset(*o).map_or(RegRule::Unsupported, RegRule::AtCfa),
                RegisterRule::ValOffset(o) => {
                    offset(*o).map_or(RegRule::Unsupported, RegRule::ValCfa)
                }
                RegisterRule::Register(from) if usize::from(from.0) < NREGS => {
                    RegRule::Register(from.0)
                }
                RegisterRule::Expression(e) => self
                    .expr_id(source, *e)
                    .map_or(RegRule::Unsupported, RegRule::AtExpr),
                RegisterRule::ValExpression(e) => self
                    .expr_id(source, *e)
                    .map_or(RegRule::Unsupported, RegRule::ValExpr),
                _ => RegRule::Unsupported,
            };
            rule.set(register.0, reg_rule);
        }
        rule.copies = rule.regs.iter().any(|r| {
            matches!(
                r,
                RegRule::Register(_) | RegRule::AtExpr(_) | RegRule::ValExpr(_)
            )
        });
        rule.signal = fde.cie().is_signal_trampoline();
        Some(Ok(rule))
    }

    /// Remembers a register rule's expression; `None` past u32::MAX of them.
    fn expr_id(&self, source: Source, expr: UnwindExpression<usize>) -> Option<ExprId> {
        let mut exprs = self.exprs.borrow_mut();
        let id = ExprId(u32::try_from(exprs.len()).ok()?);
        exprs.push((source, expr));
        Some(id)
    }

    /// Evaluates a register rule's expression with the CFA pushed first.
    fn eval_register_expression(
        &self,
        id: ExprId,
        cfa: u64,
        regs: &Regs,
        stack: &StackSnapshot<'_>,
    ) -> Result<u64, ExprError> {
        let (source, expr) = *self
            .exprs
            .borrow()
            .get(id.0 as usize)
            .ok_or_else(|| ExprError::Bad("unknown register expression".into()))?;
        self.eval_expression(source, expr, 8, Some(cfa), regs, stack)
    }

    /// Evaluates a CFA or register-rule expression with the current registers (a register rule's gets the CFA
    /// pushed first, `initial`); memory reads go to the stack snapshot.
    fn eval_expression(
        &self,
        source: Source,
        expr: UnwindExpression<usize>,
        address_size: u8,
        initial: Option<u64>,
        regs: &Regs,
        stack: &StackSnapshot<'_>,
    ) -> Result<u64, ExprError> {
        let expression = match source {
            Source::EhFrame => self.eh().map(|s| expr.get(&s)),
            Source::DebugFrame => self.debug().map(|s| expr.get(&s)),
        }
        .ok_or_else(|| ExprError::Bad("unwind section vanished".into()))?
        .map_err(|e| ExprError::Bad(e.to_string()))?;
        let encoding = gimli::Encoding {
            address_size,
            format: gimli::Format::Dwarf32,
            version: 4,
        };
        let mut eval = expression.evaluation(encoding);
        if let Some(value) = initial {
            eval.set_initial_value(value);
        }
        let bad = |e: gimli::Error| ExprError::Bad(e.to_string());
        let mut result = eval.evaluate().map_err(bad)?;
        loop {
            result = match result {
                gimli::EvaluationResult::Complete => break,
                gimli::EvaluationResult::RequiresRegister { register, .. } => {
                    let value = regs.get(register.0).ok_or(ExprError::Unknown(register.0))?;
                    eval.resume_with_register(gimli::Value::Generic(value))
                        .map_err(bad)?
                }
                gimli::EvaluationResult::RequiresMemory { address, .. } => {
                    let value = stack
                        .read_u64(address)
                        .ok_or(ExprError::Unreadable(address))?;
                    eval.resume_with_memory(gimli::Value::Generic(value))
                        .map_err(bad)?
                }
                other => {
                    return Err(ExprError::Bad(format!(
                        "unsupported DWARF expression step {other:?}"
                    )))
                }
            };
        }
        let pieces = eval.result();
        match pieces.first().map(|p| &p.location) {
            Some(gimli::Location::Address { address }) => Ok(*address),
            other => Err(ExprError::Bad(format!(
                "DWARF expression gave {other:?}, not an address"
            ))),
        }
    }
}

/// Why a CFA or register-rule expression gave no address.
enum ExprError {
    /// It reads a register whose value is unknown in this frame.
    Unknown(u16),
    /// It reads stack memory outside the snapshot.
    Unreadable(u64),
    /// It is malformed or uses an operation the evaluator does not support.
    Bad(String),
}

/// The registers of the frame being unwound, indexed by DWARF number: [`RegsX86_64`] flattened, so that a rule's
/// register number indexes them directly (the public type keeps `ip`, `sp` and `bp` as named fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Regs {
    values: [u64; NREGS],
    /// Bit n set: register n is unknown, and `values[n]` holds the stack address its save slot should have been
    /// read from (outside the stack copy), or 0 when it was never known: not sampled, undefined or not
    /// evaluable. A step that needs it reports that address, or the register.
    unknown: u32,
}

impl Regs {
    fn new(regs: &RegsX86_64) -> Self {
        let mut values = [0; NREGS];
        values[..regs.gpr.len()].copy_from_slice(&regs.gpr);
        values[usize::from(RBP)] = regs.bp;
        values[usize::from(RSP)] = regs.sp;
        values[usize::from(RA)] = regs.ip;
        Regs {
            values,
            unknown: regs.unknown,
        }
    }

    #[inline]
    fn ip(&self) -> u64 {
        self.values[usize::from(RA)]
    }

    #[inline]
    fn sp(&self) -> u64 {
        self.values[usize::from(RSP)]
    }

    #[inline]
    fn bp(&self) -> u64 {
        self.values[usize::from(RBP)]
    }

    #[inline]
    fn get(&self, r: u16) -> Option<u64> {
        let value = *self.values.get(usize::from(r))?;
        (self.unknown & (1 << r) == 0).then_some(value)
    }

    #[inline]
    fn is_known(&self, r: u16) -> bool {
        self.get(r).is_some()
    }

    /// The unreadable save slot that made `r` unknown, if that is why.
    #[inline]
    fn unknown_slot(&self, r: u16) -> Option<u64> {
        self.values.get(usize::from(r)).copied().filter(|&a| a != 0)
    }

    #[inline]
    fn set(&mut self, r: u16, value: u64) {
        if let Some(slot) = self.values.get_mut(usize::from(r)) {
            *slot = value;
            self.unknown &= !(1 << r);
        }
    }

    #[inline]
    fn set_unknown(&mut self, r: u16, slot: u64) {
        if let Some(v) = self.values.get_mut(usize::from(r)) {
            *v = slot;
            self.unknown |= 1 << r;
        }
    }
}

/// The stop reason for a step that needs DWARF register `r`, which is unknown in `regs`.
fn unknown_register(regs: &Regs, r: u16, avma: u64) -> StopReason {
    match regs.unknown_slot(r) {
        Some(addr) => StopReason::StackTooSmall { addr },
        None => StopReason::UnknownRegister { avma, register: r },
    }
}

fn scan<'s, S>(section: &S, bases: &BaseAddresses, source: Source, out: &mut Vec<IndexEntry>)
where
    S: UnwindSection<EndianSlice<'s, LittleEndian>>,
{
    let mut entries = section.entries(bases);
    // A corrupt entry ends the scan; what was indexed before it stays usable.
    while let Ok(Some(entry)) = entries.next() {
        if let gimli::CieOrFde::Fde(partial) = entry {
            let offset: usize = partial.offset();
            if let Ok(fde) = partial.parse(S::cie_from_offset) {
                if fde.len() > 0 {
                    out.push(IndexEntry {
                        start: fde.initial_address(),
                        source,
                        offset,
                    });
                }
            }
        }
    }
}

/// Options for one DWARF unwind.
#[derive(Clone, Copy, Debug)]
pub struct UnwindOptions {
    /// Stop after this many frames (perf's default `max_stack` is 127).
    pub max_frames: usize,
}

impl Default for UnwindOptions {
    fn default() -> Self {
        UnwindOptions { max_frames: 127 }
    }
}

/// Unwinds the user stack of one sample with DWARF CFI.
///
/// Returns the frames found (the IP first, then return addresses) and why the walk ended; a missing module, a
/// missing or corrupt table, or a short stack copy end this chain only.
pub fn unwind<'a>(
    regs: RegsX86_64,
    stack: &StackSnapshot<'_>,
    modules: &mut impl ModuleLookup<'a>,
    options: &UnwindOptions,
) -> Unwound {
    // Room for a typical chain, so that pushes do not reallocate.
    let mut frames = Vec::with_capacity(options.max_frames.min(32));
    let stop = unwind_into(regs, stack, modules, options, &mut frames);
    Unwound { frames, stop }
}

/// [`unwind`] into `frames` (cleared first), for a caller that keeps one buffer across samples: one allocation
/// per sample was a few percent of `bport script` on DWARF files.
pub fn unwind_into<'a>(
    regs: RegsX86_64,
    stack: &StackSnapshot<'_>,
    modules: &mut impl ModuleLookup<'a>,
    options: &UnwindOptions,
    frames: &mut Vec<FrameAddress>,
) -> StopReason {
    frames.clear();
    let mut regs = Regs::new(&regs);
    // A register whose save slot was outside the stack copy (or that was never sampled) is unknown from then on;
    // the caller's frame is still known when its return address was readable, so only a step that needs the
    // register stops. The common case is every epilogue after `pop rbp`: gcc's CFI keeps "RBP saved at CFA-16",
    // which is now below RSP and so outside the kernel's stack copy. perf's libunwind reads registers lazily
    // and shows the caller there too.
    frames.push(FrameAddress::InstructionPointer(regs.ip()));
    // libunwind's `c->dwarf.cfa`: the stack pointer of the sample, then each step's CFA. An RSP-based CFA rule
    // is taken from it, not from RSP (dwarf/Gparser.c `apply_reg_state`), and the frame-pointer fallback adds
    // 16 to it while RSP becomes RBP + 16 (x86_64/Gstep.c). The two differ only after that fallback, where
    // perf's chains go on from this value; bport's do too, for the same frames.
    let mut cfa = regs.sp();
    let stop = loop {
        if frames.len() >= options.max_frames {
            break StopReason::MaxFrames;
        }
        let frame = *frames.last().expect("starts with the IP");
        let avma = frame.lookup_address();
        let Some(module) = modules.module_at(avma) else {
            break StopReason::NoModule { avma };
        };
        let svma = avma.wrapping_sub(module.bias);
        let step = module.unwind.with_rule(svma, |cached| match cached {
            None => None,
            Some(Err(message)) => Some(Err(StopReason::BadUnwindInfo {
                avma,
                message: message.clone(),
            })),
            Some(Ok(rule)) => Some(
                step(rule, module.unwind, avma, svma, cfa, &mut regs, stack)
                    .map(|ra| (ra, rule.signal)),
            ),
        });
        if let Some(Ok((ra, _))) = step {
            // libunwind's "ip and cfa unchanged; stopping here" (dwarf/Gparser.c apply_reg_state).
            if ra == frame.address() && regs.sp() == cfa {
                break StopReason::StackDidNotGrow;
            }
            cfa = regs.sp();
        }
        match step {
            // Above a signal trampoline is the interrupted code: its address is the instruction itself, so
            // its rule is looked up there and perf prints it undecremented (libunwind's unw_is_signal_frame is
            // true for the frame a sigreturn step reached; unwind-libunwind-local.c then skips the −1).
            Some(Ok((ra, true))) => frames.push(FrameAddress::InstructionPointer(ra)),
            Some(Ok((ra, false))) => frames.push(FrameAddress::ReturnAddress(ra)),
            Some(Err(stop)) => break stop,
            // Code without CFI (crtstuff's frame_dummy and __do_global_dtors_aux, hand-written assembly): one
            // frame-pointer step, as Linux perf's libunwind does when a module has no entry for the address.
            // Without it bport's chains through such code ended a frame or more earlier than perf's.
            None => match (regs.is_known(RBP), frame_pointer_step(&regs, cfa, stack)) {
                (false, _) => match regs.unknown_slot(RBP) {
                    Some(addr) => break StopReason::StackTooSmall { addr },
                    None => break StopReason::NoUnwindInfo { avma },
                },
                (true, Some(caller)) => {
                    regs = caller;
                    cfa = cfa.wrapping_add(16);
                    frames.push(FrameAddress::ReturnAddress(caller.ip()));
                }
                (true, None) => break StopReason::NoUnwindInfo { avma },
            },
        }
    };
    stop
}

/// One CFI step: turns `regs` (this frame's) into the caller's in place and returns the caller's return
/// address, or why the walk stops there (`regs` is then partly updated and must not be used).
#[allow(clippy::too_many_arguments)]
fn step(
    rule: &Rule,
    info: &UnwindInfo,
    avma: u64,
    svma: u64,
    prev_cfa: u64,
    regs: &mut Regs,
    stack: &StackSnapshot<'_>,
) -> Result<u64, StopReason> {
    let cfa = match rule.cfa {
        CfaRuleX86::RegPlus { reg: RSP, offset } => prev_cfa.wrapping_add_signed(offset),
        CfaRuleX86::RegPlus { reg, offset } => match regs.get(reg) {
            Some(value) => value.wrapping_add_signed(offset),
            None => return Err(unknown_register(regs, reg, avma)),
        },
        CfaRuleX86::Expression {
            source,
            expr,
            address_size,
        } => match info.eval_expression(source, expr, address_size, None, regs, stack) {
            Ok(cfa) => cfa,
            Err(ExprError::Unknown(reg)) => return Err(unknown_register(regs, reg, avma)),
            Err(ExprError::Unreadable(addr)) => return Err(StopReason::StackTooSmall { addr }),
            Err(ExprError::Bad(message)) => {
                return Err(StopReason::BadUnwindInfo { avma, message })
            }
        },
    };
    // Register-to-register rules read the callee's values, which the in-place update overwrites.
    let callee = rule.copies.then_some(*regs);
    // The caller's registers are this frame's, except where the rule says otherwise.
    let mut changed = rule.changed;
    while changed != 0 {
        let r = changed.trailing_zeros() as u16;
        changed &= changed - 1;
        match rule.reg(r) {
            RegRule::SameValue => {}
            RegRule::Undefined | RegRule::Unsupported => regs.set_unknown(r, 0),
            RegRule::AtCfa(o) => {
                let addr = cfa.wrapping_add_signed(o.into());
                match stack.read_u64(addr) {
                    Some(value) => regs.set(r, value),
                    None => regs.set_unknown(r, addr),
                }
            }
            RegRule::ValCfa(o) => regs.set(r, cfa.wrapping_add_signed(o.into())),
            RegRule::AtExpr(e) | RegRule::ValExpr(e) => {
                let result = {
                    let source = callee.as_ref().unwrap_or(regs);
                    info.eval_register_expression(e, cfa, source, stack)
                };
                let value = match (result, rule.reg(r)) {
                    (Ok(value), RegRule::ValExpr(_)) => Ok(value),
                    (Ok(addr), _) => stack.read_u64(addr).ok_or(addr),
                    (Err(ExprError::Unreadable(addr)), _) => Err(addr),
                    (Err(_), _) => Err(0),
                };
                match value {
                    Ok(value) => regs.set(r, value),
                    Err(slot) => regs.set_unknown(r, slot),
                }
            }
            RegRule::Register(from) => {
                let source = callee.as_ref().unwrap_or(regs);
                match source.get(from) {
                    Some(value) => regs.set(r, value),
                    None => {
                        let slot = source.unknown_slot(from).unwrap_or(0);
                        regs.set_unknown(r, slot);
                    }
                }
            }
        }
    }
    let ra = match (rule.reg(RA), regs.get(RA)) {
        (RegRule::Undefined, _) => return Err(StopReason::Outermost),
        (_, Some(ra)) => ra,
        (RegRule::Unsupported, None) => {
            return Err(StopReason::BadUnwindInfo {
                avma,
                message: format!("unsupported return-address rule at {svma:#x}"),
            })
        }
        (_, None) => {
            return Err(match regs.unknown_slot(RA) {
                Some(addr) => StopReason::ReturnAddressOutsideStack { addr },
                None => unknown_register(regs, RA, avma),
            })
        }
    };
    if ra == 0 {
        return Err(StopReason::Outermost);
    }
    // Against libunwind's CFA, which is this frame's stack pointer except after a frame-pointer fallback. An
    // unchanged CFA is no stop by itself: libunwind stops only when the IP is unchanged too (the caller checks),
    // and a frame whose return address is in a register has CFA = RSP (`__libc_vfork` after its `pop %rdi`).
    if cfa < prev_cfa {
        return Err(StopReason::StackDidNotGrow);
    }
    regs.set(RSP, cfa);
    Ok(ra)
}

/// How far above the stack pointer a frame pointer may point and still be trusted by the fallback step (perf's
/// libunwind uses the same 16 KiB bound): a larger gap means RBP holds data, not a frame address.
const FRAME_POINTER_REACH: u64 = 0x4000;

/// The caller's registers by the x86-64 frame-pointer convention (`push rbp; mov rsp, rbp`: the caller's RBP at
/// `[rbp]`, the return address at `[rbp + 8]`, the caller's RSP at `rbp + 16`), for a frame without CFI.
///
/// `None` when RBP cannot be this frame's frame pointer (zero, below RSP or implausibly far above it), when the
/// words are outside the captured stack, or when the return address is zero (the outermost frame).
fn frame_pointer_step(regs: &Regs, cfa: u64, stack: &StackSnapshot<'_>) -> Option<Regs> {
    // Checked against libunwind's CFA (see `unwind`), which is RSP except after an earlier fallback.
    let bp = regs.bp();
    if bp == 0 || bp < cfa || bp - cfa > FRAME_POINTER_REACH {
        return None;
    }
    let ra = stack.read_u64(bp.checked_add(8)?)?;
    let caller_bp = stack.read_u64(bp)?;
    if ra == 0 {
        return None;
    }
    // Other registers keep their values, as libunwind's frame-pointer fallback leaves them.
    let mut caller = *regs;
    caller.set(RA, ra);
    caller.set(RSP, bp + 16);
    caller.set(RBP, caller_bp);
    Some(caller)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{function, synthetic};
    use super::super::Module;
    use super::*;
    use crate::perf::workloads::Build;

    /// The lookup of a static workload mapped at its link address (bias 0), 0x400000–0x500000.
    fn static_lookup<'a>(info: &'a UnwindInfo) -> impl FnMut(u64) -> Option<Module<'a>> + 'a {
        move |avma: u64| {
            (0x40_0000..0x50_0000).contains(&avma).then_some(Module {
                avma_range: 0x40_0000..0x50_0000,
                bias: 0,
                unwind: info,
            })
        }
    }

    #[test]
    fn unwinds_the_no_frame_pointer_workload_from_a_synthetic_stack() {
        let data = Build::NoFramePointer.bytes();
        let info = UnwindInfo::from_elf(data).unwrap();
        let (regs, bytes, sp, expect) = synthetic(data, 0);
        let stack = StackSnapshot {
            start: sp,
            bytes: &bytes,
        };
        // Mapped at its link address (static executable): bias 0.
        let mut lookup = static_lookup(&info);
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        let got: Vec<u64> = out.frames.iter().map(|f| f.address()).collect();
        assert_eq!(got, expect);
        assert_eq!(out.frames[0], FrameAddress::InstructionPointer(expect[0]));
        assert_eq!(out.frames[1], FrameAddress::ReturnAddress(expect[1]));
        assert_eq!(out.stop, StopReason::Outermost);

        // Same walk with the module loaded 0x10000 higher (as a PIE would be): the bias carries it.
        let shifted: Vec<u8> = bytes
            .chunks(8)
            .flat_map(|w| {
                let v = u64::from_le_bytes(w.try_into().unwrap());
                let v = if (0x40_0000..0x50_0000).contains(&v) {
                    v + 0x1_0000
                } else {
                    v
                };
                v.to_le_bytes()
            })
            .collect();
        let stack = StackSnapshot {
            start: sp,
            bytes: &shifted,
        };
        let mut lookup = |avma: u64| {
            (0x41_0000..0x51_0000).contains(&avma).then_some(Module {
                avma_range: 0x41_0000..0x51_0000,
                bias: 0x1_0000,
                unwind: &info,
            })
        };
        let regs = RegsX86_64 {
            ip: regs.ip + 0x1_0000,
            ..regs
        };
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        let got: Vec<u64> = out.frames.iter().map(|f| f.address() - 0x1_0000).collect();
        assert_eq!(got, expect);
    }

    #[test]
    fn stops_at_unmapped_caller_short_stack_and_max_frames() {
        let data = Build::NoFramePointer.bytes();
        let info = UnwindInfo::from_elf(data).unwrap();
        let (regs, bytes, sp, expect) = synthetic(data, 0x7777_0000_0000);
        let mut lookup = static_lookup(&info);
        let stack = StackSnapshot {
            start: sp,
            bytes: &bytes,
        };
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        assert_eq!(out.frames.len(), expect.len() + 1);
        assert_eq!(
            out.stop,
            StopReason::NoModule {
                avma: 0x7777_0000_0000 - 1
            }
        );
        // Only the first 8 bytes captured: the leaf's return address is readable, the next one is not.
        let short = StackSnapshot {
            start: sp,
            bytes: &bytes[..8],
        };
        let out = unwind(regs, &short, &mut lookup, &UnwindOptions::default());
        assert_eq!(out.frames.len(), 2);
        assert!(
            matches!(out.stop, StopReason::ReturnAddressOutsideStack { .. }),
            "{:?}",
            out.stop
        );
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions { max_frames: 2 });
        assert_eq!((out.frames.len(), out.stop), (2, StopReason::MaxFrames));
    }

    #[test]
    fn eh_frame_hdr_and_linear_index_agree_and_rules_are_cached() {
        let data = Build::NoFramePointer.bytes();
        let file = object::File::parse(data).unwrap();
        let sec = |name: &str| {
            file.section_by_name(name).map(|s| Section {
                svma: s.address(),
                data: s.data().unwrap().to_vec(),
            })
        };
        let text = file.section_by_name(".text").unwrap().address();
        let scanned = UnwindInfo::from_sections(sec(".eh_frame"), None, None, text, 0);
        let from_elf = UnwindInfo::from_elf(data).unwrap();
        assert!(scanned.index.len() > 10);
        let starts = |i: &UnwindInfo| i.index.iter().map(|e| e.start).collect::<Vec<_>>();
        assert_eq!(starts(&scanned), starts(&from_elf));
        let (c, _) = function(data, "chain_c");
        let rule = scanned.rule_at(c + 0x20).unwrap().unwrap();
        let mut expect = Rule::new(CfaRuleX86::RegPlus {
            reg: RSP,
            offset: 8,
        });
        expect.set(RA, RegRule::AtCfa(-8));
        assert_eq!(rule, expect);
        assert_eq!(rule.changed, 1 << RA);
        assert_eq!(scanned.cache.borrow().len(), 1);
        assert_eq!(scanned.rule_at(c + 0x20), Some(Ok(rule)));
        assert_eq!(scanned.cache.borrow().len(), 1);
        assert_eq!(scanned.rule_at(0x10), None);
        assert_eq!(scanned.cache.borrow().get(&0x10), Some(&None));
    }

    #[test]
    fn corrupt_unwind_table_ends_the_chain_not_the_run() {
        let data = Build::NoFramePointer.bytes();
        let file = object::File::parse(data).unwrap();
        let eh = file.section_by_name(".eh_frame").unwrap();
        let text = file.section_by_name(".text").unwrap().address();
        let good = UnwindInfo::from_sections(
            Some(Section {
                svma: eh.address(),
                data: eh.data().unwrap().to_vec(),
            }),
            None,
            None,
            text,
            0,
        );
        // Corrupt every FDE's instructions after indexing: fill the section body with DW_CFA opcodes that are
        // invalid (0x3f is reserved) while keeping the entry headers, by rewriting bytes past each header.
        let mut bytes = eh.data().unwrap().to_vec();
        for entry in &good.index {
            let o = entry.offset;
            // length(4) + CIE pointer(4) + pc_begin(4) + pc_range(4) + aug length(1) → instructions.
            for b in bytes.iter_mut().skip(o + 17).take(3) {
                *b = 0x3f;
            }
        }
        let bad = UnwindInfo::from_sections(
            Some(Section {
                svma: eh.address(),
                data: bytes,
            }),
            None,
            None,
            text,
            0,
        );
        let (regs, stack_bytes, sp, _) = synthetic(data, 0);
        let stack = StackSnapshot {
            start: sp,
            bytes: &stack_bytes,
        };
        let mut lookup = static_lookup(&bad);
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        assert_eq!(out.frames, vec![FrameAddress::InstructionPointer(regs.ip)]);
        assert!(
            matches!(out.stop, StopReason::BadUnwindInfo { .. }),
            "{:?}",
            out.stop
        );
    }

    #[test]
    fn after_a_frame_pointer_step_rsp_based_cfa_comes_from_libunwinds_cfa() {
        // libunwind's fallback adds 16 to its CFA while RSP becomes RBP + 16, and an RSP-based CFA rule is taken
        // from the CFA: where RBP was not really this frame's frame pointer (libm's `_fini`, which has no CFI, in
        // a sample at its first instruction), perf's next frame comes from SP + 16 + offset. bport follows it.
        let data = Build::NoFramePointer.bytes();
        let info = UnwindInfo::from_elf(data).unwrap();
        let (dummy, _) = function(data, "frame_dummy");
        assert!(info.rule_at(dummy).is_none(), "frame_dummy gained CFI");
        let (c, _) = function(data, "chain_c");
        let rule = info.rule_at(c + 0x20).unwrap().unwrap();
        assert_eq!(
            rule.cfa,
            CfaRuleX86::RegPlus {
                reg: RSP,
                offset: 8
            }
        );
        let mut lookup = static_lookup(&info);
        let sp = 0x7ffd_0000_1000u64;
        let bp = sp + 0x80;
        let (from_cfa, from_rsp) = (0x7777_0000_0000u64, 0x6666_0000_0000u64);
        let mut words = vec![0u64; 0x20];
        words[2] = from_cfa; // sp + 16: chain_c's return slot by libunwind's CFA (sp + 16 + 8 - 8)
        words[0x80 / 8] = 0x7ffd_0000_2000; // the caller's RBP at [rbp]
        words[0x88 / 8] = c + 0x21; // the return address into chain_c at [rbp + 8]
        words[0x90 / 8] = from_rsp; // chain_c's return slot if RSP (rbp + 16) were used
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let stack = StackSnapshot {
            start: sp,
            bytes: &bytes,
        };
        let out = unwind(
            RegsX86_64::new(dummy, sp, bp),
            &stack,
            &mut lookup,
            &UnwindOptions::default(),
        );
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(dummy),
                FrameAddress::ReturnAddress(c + 0x21),
                FrameAddress::ReturnAddress(from_cfa),
            ]
        );
        assert_eq!(out.stop, StopReason::NoModule { avma: from_cfa - 1 });
    }

    #[test]
    fn code_without_cfi_takes_one_frame_pointer_step() {
        let data = Build::NoFramePointer.bytes();
        let info = UnwindInfo::from_elf(data).unwrap();
        // crtstuff's frame_dummy has no FDE in the static workloads (gcc builds crtstuff without unwind tables).
        let dummy = {
            use object::{Object, ObjectSymbol};
            let elf = object::File::parse(data).unwrap();
            let sym = elf
                .symbols()
                .find(|s| s.name() == Ok("frame_dummy"))
                .unwrap();
            sym.address()
        };
        assert!(
            info.rule_at(dummy + 0x1c).is_none(),
            "frame_dummy gained CFI"
        );
        let mut lookup = static_lookup(&info);
        // frame_dummy after `push rbp; mov rsp, rbp`: RBP = RSP, the caller's RBP and return address above it.
        let sp = 0x7ffd_0000_1000u64;
        let caller = 0x7777_0000_0000u64; // unmapped: the walk stops right after the step
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0x7ffd_0000_1080u64.to_le_bytes());
        bytes.extend_from_slice(&caller.to_le_bytes());
        let stack = StackSnapshot {
            start: sp,
            bytes: &bytes,
        };
        let regs = RegsX86_64::new(dummy + 0x1c, sp, sp);
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(dummy + 0x1c),
                FrameAddress::ReturnAddress(caller)
            ]
        );
        assert_eq!(out.stop, StopReason::NoModule { avma: caller - 1 });
        // RBP that cannot be a frame pointer (below RSP, or far above it): no guess, the walk stops there.
        for bp in [sp - 16, sp + FRAME_POINTER_REACH + 8] {
            let out = unwind(
                RegsX86_64 { bp, ..regs },
                &stack,
                &mut lookup,
                &UnwindOptions::default(),
            );
            assert_eq!(out.frames.len(), 1);
            assert_eq!(out.stop, StopReason::NoUnwindInfo { avma: dummy + 0x1c });
        }
    }

    #[test]
    fn an_epilogue_after_pop_rbp_still_yields_the_caller() {
        let data = Build::FramePointer.bytes();
        let info = UnwindInfo::from_elf(data).unwrap();
        let symbol = |name: &str| {
            use object::{Object, ObjectSymbol};
            let elf = object::File::parse(data).unwrap();
            let sym = elf.symbols().find(|s| s.name() == Ok(name)).unwrap();
            sym.address()..sym.address() + sym.size()
        };
        let rule = |a: u64| info.rule_at(a).unwrap().unwrap();
        // chain_b after `pop rbp`: CFA = RSP + 8, but the CFI still says RBP is saved at CFA - 16 (below RSP).
        let ip = symbol("chain_b")
            .find(|&a| {
                let r = rule(a);
                r.cfa
                    == CfaRuleX86::RegPlus {
                        reg: RSP,
                        offset: 8,
                    }
                    && r.reg(RBP) == RegRule::AtCfa(-16)
            })
            .expect("gcc's epilogue CFI in chain_b");
        // The return address into chain_a, whose CFA is RBP-based (so the walk cannot go past it).
        let ra = symbol("chain_a")
            .find(|&a| matches!(rule(a).cfa, CfaRuleX86::RegPlus { reg: RBP, .. }))
            .unwrap()
            + 1;
        let sp = 0x7ffd_0000_1000u64;
        let bytes = ra.to_le_bytes();
        let stack = StackSnapshot {
            start: sp,
            bytes: &bytes,
        };
        let mut lookup = static_lookup(&info);
        let regs = RegsX86_64::new(ip, sp, 0x7ffd_0000_1010);
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(ip),
                FrameAddress::ReturnAddress(ra)
            ]
        );
        // chain_a's CFA needs the RBP that was not captured: that step stops, naming the word it lacked.
        assert_eq!(out.stop, StopReason::StackTooSmall { addr: sp + 8 - 16 });
    }

    /// An UnwindInfo whose cache is seeded with hand-made rules: unit tests of the step logic without CFI bytes.
    fn seeded(rules: &[(u64, Rule)]) -> UnwindInfo {
        let info = UnwindInfo::default();
        for (svma, rule) in rules {
            info.cache.borrow_mut().insert(*svma, Some(Ok(*rule)));
        }
        info
    }

    fn rule(cfa_reg: u16, cfa_offset: i64, saved: &[(u16, RegRule)]) -> Rule {
        let mut r = Rule::new(CfaRuleX86::RegPlus {
            reg: cfa_reg,
            offset: cfa_offset,
        });
        for &(reg, rr) in saved {
            r.set(reg, rr);
        }
        r.copies = r.regs.iter().any(|x| matches!(x, RegRule::Register(_)));
        r
    }

    fn words(start: u64, len: usize, put: &[(u64, u64)]) -> Vec<u8> {
        let mut bytes = vec![0u8; len];
        for &(addr, v) in put {
            let o = (addr - start) as usize;
            bytes[o..o + 8].copy_from_slice(&v.to_le_bytes());
        }
        bytes
    }

    const RBX: u16 = RegsX86_64::DWARF_RBX;

    #[test]
    fn cfa_based_on_rbx_uses_the_rbx_a_callee_saved() {
        // leaf (0x1000): push rbx; CFA = rsp+16, rbx at CFA-16. resolver (0x2000): CFA = rbx+32 with rbx at
        // CFA-32 (glibc's _dl_runtime_resolve shape). caller (0x3000): CFA = rsp+8, and its caller's slot is 0.
        let leaf = rule(
            RSP,
            16,
            &[(RBX, RegRule::AtCfa(-16)), (RA, RegRule::AtCfa(-8))],
        );
        let resolver = rule(
            RBX,
            32,
            &[(RBX, RegRule::AtCfa(-32)), (RA, RegRule::AtCfa(-8))],
        );
        let caller = rule(RSP, 8, &[(RA, RegRule::AtCfa(-8))]);
        let info = seeded(&[(0x1000, leaf), (0x2000, resolver), (0x3000, caller)]);
        let mut lookup = |avma: u64| {
            (0x1000..0x4000).contains(&avma).then_some(Module {
                avma_range: 0x1000..0x4000,
                bias: 0,
                unwind: &info,
            })
        };
        let s = 0x7ffc_0000_1000u64;
        // The resolver realigned RSP below its rbx: rbx = s+0x40 points at the caller's saved rbx.
        let b = s + 0x40;
        let bytes = words(
            s,
            0x80,
            &[
                (s, b),
                (s + 8, 0x2001),
                (b, 0x1234),
                (b + 24, 0x3001),
                (b + 32, 0),
            ],
        );
        let stack = StackSnapshot {
            start: s,
            bytes: &bytes,
        };
        // Sampled with IP, SP and a clobbered RBX only: RBP and the rest are unknown and never needed.
        let mask = (1 << RegsX86_64::PERF_REG_IP)
            | (1 << RegsX86_64::PERF_REG_SP)
            | (1 << crate::perf::abi::PERF_REG_X86_BX);
        // Values in PERF_REG order: BX (1), SP (7), IP (8).
        let regs = RegsX86_64::from_perf_regs(mask, &[0xdead_beef, s, 0x1000]).unwrap();
        assert_eq!(regs.get(RBX), Some(0xdead_beef));
        assert_eq!(regs.get(RBP), None);
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(0x1000),
                FrameAddress::ReturnAddress(0x2001),
                FrameAddress::ReturnAddress(0x3001),
            ]
        );
        assert_eq!(out.stop, StopReason::Outermost);

        // Without the leaf's save rule, the sampled (clobbered) rbx would be used: the resolver step must
        // instead stop when rbx is simply not known.
        let leaf_no_save = rule(RSP, 16, &[(RA, RegRule::AtCfa(-8))]);
        let info2 = seeded(&[(0x1000, leaf_no_save), (0x2000, resolver)]);
        let mut lookup2 = |avma: u64| {
            (0x1000..0x4000).contains(&avma).then_some(Module {
                avma_range: 0x1000..0x4000,
                bias: 0,
                unwind: &info2,
            })
        };
        let no_rbx = RegsX86_64::from_perf_regs(
            (1 << RegsX86_64::PERF_REG_IP) | (1 << RegsX86_64::PERF_REG_SP),
            &[s, 0x1000],
        )
        .unwrap();
        let out = unwind(no_rbx, &stack, &mut lookup2, &UnwindOptions::default());
        assert_eq!(out.frames.len(), 2, "{out:?}");
        assert_eq!(
            out.stop,
            StopReason::UnknownRegister {
                avma: 0x2000,
                register: RBX
            }
        );

        // rbx's save slot outside the stack copy (the copy starts at the return-address slot): the leaf step
        // still yields the resolver, whose step then names the missing word.
        let short = StackSnapshot {
            start: s + 8,
            bytes: &bytes[8..],
        };
        let out = unwind(regs, &short, &mut lookup, &UnwindOptions::default());
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(0x1000),
                FrameAddress::ReturnAddress(0x2001),
            ]
        );
        assert_eq!(out.stop, StopReason::StackTooSmall { addr: s });
    }

    #[test]
    fn register_copies_read_the_callee_values() {
        // leaf: rbx holds the caller's rbp (Register rule), rbp holds the caller's rbx; both swap at once.
        let leaf = rule(
            RSP,
            8,
            &[
                (RBX, RegRule::Register(RBP)),
                (RBP, RegRule::Register(RBX)),
                (RA, RegRule::AtCfa(-8)),
            ],
        );
        // The caller's CFA is rbp-based and its return address is undefined: the walk ends there.
        let caller = rule(RBP, 16, &[(RA, RegRule::Undefined)]);
        let info = seeded(&[(0x1000, leaf), (0x2000, caller)]);
        let mut lookup = |avma: u64| {
            (0x1000..0x3000).contains(&avma).then_some(Module {
                avma_range: 0x1000..0x3000,
                bias: 0,
                unwind: &info,
            })
        };
        let s = 0x7ffc_0000_1000u64;
        let bytes = words(s, 16, &[(s, 0x2001)]);
        let stack = StackSnapshot {
            start: s,
            bytes: &bytes,
        };
        let mut regs = RegsX86_64::new(0x1000, s, 0x5555);
        regs.set(RBX, 0x6666);
        let mut probe = Regs::new(&regs);
        let ra = info.with_rule(0x1000, |c| {
            step(
                c.as_ref().unwrap().as_ref().unwrap(),
                &info,
                0x1000,
                0x1000,
                s,
                &mut probe,
                &stack,
            )
        });
        assert_eq!(ra, Ok(0x2001));
        assert_eq!(
            (probe.get(RBX), probe.bp(), probe.sp()),
            (Some(0x5555), 0x6666, s + 8)
        );
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        assert_eq!(out.frames.len(), 2);
        assert_eq!(out.stop, StopReason::Outermost);
    }

    /// glibc's `__libc_vfork` pops its return address into RDI before the syscall (the child must not clobber
    /// it on the shared stack): its CFI there says CFA = RSP + 0, return address in RDI. The CFA does not grow,
    /// but the IP changes, so the walk goes on as libunwind's does (it stops only when both stay the same).
    #[test]
    fn a_return_address_in_a_register_with_an_unchanged_cfa_goes_on() {
        const RDI: u16 = 5;
        let vfork = rule(RSP, 0, &[(RA, RegRule::Register(RDI))]);
        let caller = rule(RSP, 8, &[(RA, RegRule::AtCfa(-8))]);
        let spin = rule(RSP, 0, &[(RA, RegRule::Register(RBX))]);
        let info = seeded(&[(0x1000, vfork), (0x1fff, caller), (0x2fff, spin)]);
        let mut lookup = |avma: u64| {
            (0x1000..0x4000).contains(&avma).then_some(Module {
                avma_range: 0x1000..0x4000,
                bias: 0,
                unwind: &info,
            })
        };
        let s = 0x7ffc_0000_1000u64;
        let bytes = words(s, 16, &[(s, 0x3000)]);
        let stack = StackSnapshot {
            start: s,
            bytes: &bytes,
        };
        let mut regs = RegsX86_64::new(0x1000, s, 0x5555);
        regs.set(RDI, 0x2000);
        regs.set(RBX, 0x3000);
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        // vfork -> its caller (RA from RDI, CFA unchanged) -> 0x3000, whose rule gives back its own address
        // with the same CFA: libunwind's "ip and cfa unchanged" stop.
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(0x1000),
                FrameAddress::ReturnAddress(0x2000),
                FrameAddress::ReturnAddress(0x3000),
            ]
        );
        assert_eq!(out.stop, StopReason::StackDidNotGrow);
    }

    /// glibc's dynamic loader, whose lazy-binding resolver keeps its CFA in RBX. A system file: missing it is a
    /// loud skip locally and a failure under CI, like the oracle tools of the integration tests.
    fn system_ld_so() -> Option<Vec<u8>> {
        system_file(
            &[
                "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
                "/lib64/ld-linux-x86-64.so.2",
            ],
            "install libc6",
        )
    }

    #[test]
    fn unwinds_through_the_real_lazy_binding_resolver_of_ld_so() {
        let Some(data) = system_ld_so() else {
            return;
        };
        let info = UnwindInfo::from_elf(&data).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let text = file.section_by_name(".text").unwrap();
        let code = text.data().unwrap();
        let text_at = |svma: u64| &code[(svma - text.address()) as usize..];
        // _dl_runtime_resolve_{xsavec,xsave,fxsave}: `push rbx; mov rsp, rbx` then CFA = rbx+32 (ld.so has no
        // symbol table, so they are found by that CFI and checked against their first bytes).
        let resolvers: Vec<u64> = info
            .index
            .iter()
            .map(|e| e.start)
            .filter(|&start| {
                info.rule_at(start + 4)
                    .and_then(Result::ok)
                    .is_some_and(|r| {
                        r.cfa
                            == CfaRuleX86::RegPlus {
                                reg: RBX,
                                offset: 32,
                            }
                            && r.reg(RBX) == RegRule::AtCfa(-32)
                            && r.reg(RA) == RegRule::AtCfa(-8)
                    })
            })
            .collect();
        assert!(!resolvers.is_empty(), "no rbx-based resolver CFI in ld.so");
        let resolver = resolvers[0];
        assert_eq!(&text_at(resolver)[..4], &[0x53, 0x48, 0x89, 0xe3]);
        // Its call to _dl_fixup: the first E8 after the prologue.
        let call = (4..0x100)
            .map(|i| resolver + i)
            .find(|&a| text_at(a)[0] == 0xe8)
            .unwrap();
        let rel = i32::from_le_bytes(text_at(call)[1..5].try_into().unwrap());
        let ret = call + 5;
        let fixup = ret.wrapping_add_signed(rel.into());
        // A point in _dl_fixup after its prologue saved rbx (its frame laid out from its own CFI).
        let (ip, fixup_rule) = (fixup..fixup + 0x100)
            .find_map(|a| {
                let r = info.rule_at(a)?.ok()?;
                (matches!(r.cfa, CfaRuleX86::RegPlus { reg: RSP, .. })
                    && matches!(r.reg(RBX), RegRule::AtCfa(_)))
                .then_some((a, r))
            })
            .expect("_dl_fixup saves rbx");
        let (CfaRuleX86::RegPlus { offset: k, .. }, RegRule::AtCfa(rbx_off)) =
            (fixup_rule.cfa, fixup_rule.reg(RBX))
        else {
            unreachable!()
        };
        let bias = 0x7f12_3400_0000u64;
        let mut lookup = |avma: u64| {
            (bias..bias + 0x10_0000).contains(&avma).then_some(Module {
                avma_range: bias..bias + 0x10_0000,
                bias,
                unwind: &info,
            })
        };
        let s = 0x7ffc_0000_1000u64;
        let cfa0 = s + k as u64;
        // The resolver's rbx: above _dl_fixup's frame, past the xsave area it realigned RSP below.
        let b = cfa0 + 0x400;
        let planted = 0x7777_0000_1234u64;
        let bytes = words(
            s,
            (b + 40 - s) as usize,
            &[
                (cfa0.wrapping_add_signed(rbx_off.into()), b),
                (cfa0 - 8, bias + ret),
                (b, 0x1234),
                (b + 24, planted),
            ],
        );
        let stack = StackSnapshot {
            start: s,
            bytes: &bytes,
        };
        let mut regs = RegsX86_64::new(bias + ip, s, 0);
        regs.set(RBX, 0xdead_beef); // clobbered by _dl_fixup: only the saved copy leads on
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(bias + ip),
                FrameAddress::ReturnAddress(bias + ret),
                FrameAddress::ReturnAddress(planted),
            ]
        );
        assert_eq!(out.stop, StopReason::NoModule { avma: planted - 1 });
    }

    /// The first of `paths` that exists; when none does, a loud SKIPPED line, or a panic under `CI=true`.
    fn system_file(paths: &[&str], hint: &str) -> Option<Vec<u8>> {
        for path in paths {
            if let Ok(bytes) = std::fs::read(path) {
                return Some(bytes);
            }
        }
        crate::test_require::require(false, &format!("{} not found", paths[0]), hint);
        None
    }

    #[test]
    fn unwinds_through_glibcs_signal_trampoline_into_the_interrupted_code() {
        // A system file: loud skip locally, failure under CI (as the integration tests' oracle tools).
        let Some(libc) = system_file(
            &[
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                "/lib/x86_64-linux-gnu/libc.so.6",
            ],
            "install libc6",
        ) else {
            return;
        };
        let info = UnwindInfo::from_elf(&libc).unwrap();
        // __restore_rt's FDE (CIE augmentation "S") starts one byte early, at the nop before it, so that a
        // return address to __restore_rt looked up at −1 finds it.
        let trampolines: Vec<u64> = info
            .index
            .iter()
            .map(|e| e.start)
            .filter(|&a| {
                info.rule_at(a)
                    .and_then(Result::ok)
                    .is_some_and(|r| r.signal)
            })
            .collect();
        assert_eq!(trampolines.len(), 1, "{trampolines:x?}");
        let restore_rt = trampolines[0] + 1;
        // The handler (0x1000) returns to __restore_rt; the interrupted code (0x2005) keeps its CFA in rbx, so
        // only the rbx restored from the ucontext leads on, and its rule exists only at the exact address.
        let handler = rule(RSP, 8, &[(RA, RegRule::AtCfa(-8))]);
        let interrupted = rule(RBX, 16, &[(RA, RegRule::AtCfa(-8))]);
        let seeded = seeded(&[(0x1000, handler), (0x2005, interrupted)]);
        let bias = 0x7f55_0000_0000u64;
        let mut lookup = |avma: u64| {
            if (bias..bias + 0x20_0000).contains(&avma) {
                Some(Module {
                    avma_range: bias..bias + 0x20_0000,
                    bias,
                    unwind: &info,
                })
            } else {
                (0x1000..0x3000).contains(&avma).then_some(Module {
                    avma_range: 0x1000..0x3000,
                    bias: 0,
                    unwind: &seeded,
                })
            }
        };
        let s = 0x7ffc_0000_1000u64;
        // The kernel's rt_sigframe after the handler's return address: a ucontext_t, whose mcontext general
        // registers start at 40 (uc_flags, uc_link, stack_t) in the order R8–R15, RDI, RSI, RBP, RBX, RDX, RAX,
        // RCX, RSP, RIP (glibc sys/ucontext.h REG_*), laid out here from that ABI, not from the CFI.
        let uc = s + 8;
        let greg = |i: u64| uc + 40 + 8 * i;
        let interrupted_sp = s + 0x800;
        let rbx = interrupted_sp + 0x100;
        let bytes = words(
            s,
            0x1000,
            &[
                (s, bias + restore_rt),
                (greg(11), rbx),
                (greg(15), interrupted_sp),
                (greg(16), 0x2005),
                (rbx + 8, 0),
            ],
        );
        let stack = StackSnapshot {
            start: s,
            bytes: &bytes,
        };
        let mut regs = RegsX86_64::new(0x1000, s, 0);
        regs.set(RBX, 0xdead_beef);
        let out = unwind(regs, &stack, &mut lookup, &UnwindOptions::default());
        assert_eq!(
            out.frames,
            vec![
                FrameAddress::InstructionPointer(0x1000),
                FrameAddress::ReturnAddress(bias + restore_rt),
                // Printed undecremented, as perf does for the frame a sigreturn step reaches.
                FrameAddress::InstructionPointer(0x2005),
            ]
        );
        assert_eq!(out.stop, StopReason::Outermost);
    }
}
