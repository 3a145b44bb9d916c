//! Unwinding as pure functions over registers and stack bytes: frame pointer ([`fp`]), DWARF CFI ([`dwarf`], with
//! gimli) and LBR call stacks ([`lbr`]).
//!
//! Owns: turning a sample's registers, its copy of the user stack and the kernel's callchain into a list of
//! [`FrameAddress`]es. Does not own: reading perf.data (`perf::data`), finding which file backs an address or
//! naming it (`perf::symbols`), printing (`perf::script`).
//!
//! The unwinders never touch the file system or the profiled process: modules come through a lookup closure
//! ([`ModuleLookup`]) and stack words through a [`StackSnapshot`], so tests run them on synthetic stacks (the
//! design of framehop). Unwind rules are cached per DSO inside [`dwarf::UnwindInfo`].
//!
//! Follows the x86_64 psABI (DWARF register numbers, return address at CFA−8) and perf's conventions for which
//! address of a frame is printed (tools/perf/util/unwind-libdw.c, unwind-libunwind-local.c: caller frames are
//! reported at `return address − 1`).

pub mod dwarf;
pub mod fp;
pub mod lbr;

use std::ops::Range;

/// One frame of a callchain: the sampled instruction pointer, or the return address of a caller.
///
/// The distinction matters for lookups: a return address points after the call instruction, possibly into the
/// next function (or past the end of a `noreturn` caller), so symbols, unwind rules and line numbers of a caller
/// are looked up at `address − 1` ([`FrameAddress::lookup_address`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameAddress {
    /// The address of the instruction that was executing (the sample's IP).
    InstructionPointer(u64),
    /// A return address found on the stack or in a register: the instruction after a call.
    ReturnAddress(u64),
}

impl FrameAddress {
    /// The address as found (IP or return address).
    pub fn address(self) -> u64 {
        match self {
            FrameAddress::InstructionPointer(a) | FrameAddress::ReturnAddress(a) => a,
        }
    }

    /// The address to look symbols and unwind rules up at: the IP itself, or `return address − 1` (inside the
    /// call instruction). The one place the −1 rule lives.
    pub fn lookup_address(self) -> u64 {
        match self {
            FrameAddress::InstructionPointer(a) => a,
            FrameAddress::ReturnAddress(a) => a.saturating_sub(1),
        }
    }
}

/// The x86_64 user registers, taken from a sample's `regs_user`: the sixteen general registers and RIP.
///
/// DWARF CFI may base a CFA on any register (glibc's `_dl_runtime_resolve_xsavec` realigns RSP and keeps the CFA in
/// RBX) and any callee may save any register, so the unwinder carries all of them from frame to frame, as
/// libunwind does. A register whose value is not known — not in the sample's mask, undefined by the CFI, or saved
/// in a slot outside the captured stack — is marked unknown; only a step that needs it stops.
///
/// `ip`, `sp` and `bp` are plain fields because every unwinder reads them; the rest are reached by DWARF register
/// number through [`RegsX86_64::get`]. Writing a field directly keeps the register's known/unknown state; use
/// [`RegsX86_64::set`] to make an unknown register known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegsX86_64 {
    /// RIP (DWARF 16, the return-address column).
    pub ip: u64,
    /// RSP (DWARF 7).
    pub sp: u64,
    /// RBP (DWARF 6).
    pub bp: u64,
    /// DWARF registers 0–15 except RBP and RSP (their slots stay 0): RAX RDX RCX RBX RSI RDI _ _ R8–R15.
    gpr: [u64; 16],
    /// Bit n set: DWARF register n is unknown (not in the sample's mask); its value slot is 0.
    unknown: u32,
}

impl RegsX86_64 {
    /// Bit of `PERF_REG_X86_*` in `sample_regs_user` for BP, SP and IP (arch/x86/include/uapi/asm/perf_regs.h).
    pub const PERF_REG_BP: u32 = crate::perf::abi::PERF_REG_X86_BP;
    /// `PERF_REG_X86_SP`.
    pub const PERF_REG_SP: u32 = crate::perf::abi::PERF_REG_X86_SP;
    /// `PERF_REG_X86_IP`.
    pub const PERF_REG_IP: u32 = crate::perf::abi::PERF_REG_X86_IP;

    /// Number of DWARF registers carried: 0–15 (general registers) and 16 (RIP).
    pub const DWARF_REGS: u16 = 17;
    /// DWARF register number of RBX.
    pub const DWARF_RBX: u16 = 3;
    /// DWARF register number of RBP.
    pub const DWARF_RBP: u16 = 6;
    /// DWARF register number of RSP.
    pub const DWARF_RSP: u16 = 7;
    /// DWARF register number of the return address (RIP).
    pub const DWARF_RA: u16 = 16;

    /// For each `PERF_REG_X86_*` index, its DWARF register number (x86_64 psABI figure 3.36 against
    /// arch/x86/include/uapi/asm/perf_regs.h); `NOT_GPR` for FLAGS and the segment registers.
    const DWARF_OF_PERF: [u16; 24] = {
        use crate::perf::abi::*;
        let mut map = [Self::NOT_GPR; 24];
        map[PERF_REG_X86_AX as usize] = 0;
        map[PERF_REG_X86_DX as usize] = 1;
        map[PERF_REG_X86_CX as usize] = 2;
        map[PERF_REG_X86_BX as usize] = 3;
        map[PERF_REG_X86_SI as usize] = 4;
        map[PERF_REG_X86_DI as usize] = 5;
        map[PERF_REG_X86_BP as usize] = 6;
        map[PERF_REG_X86_SP as usize] = 7;
        let mut r = 0;
        while r < 8 {
            map[PERF_REG_X86_R8 as usize + r] = 8 + r as u16;
            r += 1;
        }
        map[PERF_REG_X86_IP as usize] = 16;
        map
    };
    const NOT_GPR: u16 = u16::MAX;
    /// `unknown` with every register unknown.
    const ALL_UNKNOWN: u32 = (1 << Self::DWARF_REGS) - 1;

    /// Registers with only IP, SP and BP known (the frame-pointer unwinder's view, and tests').
    pub fn new(ip: u64, sp: u64, bp: u64) -> Self {
        let mut regs = RegsX86_64 {
            ip,
            sp,
            bp,
            ..Default::default()
        };
        for r in 0..Self::DWARF_REGS {
            if !matches!(r, Self::DWARF_RBP | Self::DWARF_RSP | Self::DWARF_RA) {
                regs.set_unknown(r);
            }
        }
        regs
    }

    /// Reads a sample's `regs_user` values, which hold one u64 per set bit of `mask`, in bit order. `None` when
    /// the mask lacks IP or SP or `values` is short (a sample taken in a kernel thread has `abi == NONE` and no
    /// values at all); every other register the mask lacks is unknown.
    pub fn from_perf_regs(mask: u64, values: &[u64]) -> Option<Self> {
        let mut regs = RegsX86_64 {
            unknown: Self::ALL_UNKNOWN,
            ..Default::default()
        };
        // Values come in mask-bit order: walk the set bits. This runs once per DWARF sample, so RBP and RSP go
        // through their general-register slots and are moved to their fields after the walk, instead of a
        // three-way branch per value.
        let mut bits = mask;
        for &value in values {
            if bits == 0 {
                break;
            }
            let bit = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let r = Self::DWARF_OF_PERF
                .get(bit)
                .copied()
                .unwrap_or(Self::NOT_GPR);
            if let Some(slot) = regs.gpr.get_mut(usize::from(r)) {
                *slot = value;
                regs.unknown &= !(1 << r);
            } else if r == Self::DWARF_RA {
                regs.ip = value;
                regs.unknown &= !(1 << r);
            }
        }
        regs.bp = std::mem::take(&mut regs.gpr[usize::from(Self::DWARF_RBP)]);
        regs.sp = std::mem::take(&mut regs.gpr[usize::from(Self::DWARF_RSP)]);
        (regs.is_known(Self::DWARF_RA) && regs.is_known(Self::DWARF_RSP)).then_some(regs)
    }

    /// The value of DWARF register `r`, `None` when it is unknown or not a register this type carries.
    #[inline]
    pub fn get(&self, r: u16) -> Option<u64> {
        if r >= Self::DWARF_REGS || self.unknown & (1 << r) != 0 {
            return None;
        }
        Some(self.raw(r))
    }

    /// Whether DWARF register `r` is known.
    #[inline]
    pub fn is_known(&self, r: u16) -> bool {
        r < Self::DWARF_REGS && self.unknown & (1 << r) == 0
    }

    /// Sets DWARF register `r` (0–16) to a known value; other numbers are ignored.
    #[inline]
    pub fn set(&mut self, r: u16, value: u64) {
        if r >= Self::DWARF_REGS {
            return;
        }
        self.set_raw(r, value);
        self.unknown &= !(1 << r);
    }

    /// Marks DWARF register `r` (0–16) unknown.
    #[inline]
    pub fn set_unknown(&mut self, r: u16) {
        if r >= Self::DWARF_REGS {
            return;
        }
        self.set_raw(r, 0);
        self.unknown |= 1 << r;
    }

    #[inline]
    fn raw(&self, r: u16) -> u64 {
        match r {
            Self::DWARF_RBP => self.bp,
            Self::DWARF_RSP => self.sp,
            Self::DWARF_RA => self.ip,
            r => self.gpr.get(usize::from(r)).copied().unwrap_or(0),
        }
    }

    #[inline]
    fn set_raw(&mut self, r: u16, value: u64) {
        match r {
            Self::DWARF_RBP => self.bp = value,
            Self::DWARF_RSP => self.sp = value,
            Self::DWARF_RA => self.ip = value,
            r => {
                if let Some(slot) = self.gpr.get_mut(usize::from(r)) {
                    *slot = value;
                }
            }
        }
    }
}

/// The sample's copy of the user stack: `bytes` were at `start..start+bytes.len()` (start = SP at the sample).
#[derive(Clone, Copy, Debug)]
pub struct StackSnapshot<'a> {
    /// The avma of `bytes[0]`.
    pub start: u64,
    /// The dumped stack bytes (little-endian words on x86_64).
    pub bytes: &'a [u8],
}

impl StackSnapshot<'_> {
    /// The u64 at `addr`, or `None` when it is outside the snapshot (the unwinder then stops, as perf's does).
    pub fn read_u64(&self, addr: u64) -> Option<u64> {
        let offset = usize::try_from(addr.checked_sub(self.start)?).ok()?;
        let end = offset.checked_add(8)?;
        let word = self.bytes.get(offset..end)?;
        Some(u64::from_le_bytes(
            word.try_into().expect("slice of 8 bytes"),
        ))
    }
}

/// A mapped module as the unwinder sees it: where it is mapped, how its addresses relate to the file's, and its
/// unwind tables.
#[derive(Clone, Debug)]
pub struct Module<'a> {
    /// The avma range this mapping covers.
    pub avma_range: Range<u64>,
    /// `avma − svma` for addresses in this mapping (see [`crate::perf::symbols::Dso::bias`]).
    pub bias: u64,
    /// The module's unwind tables, parsed once per DSO.
    pub unwind: &'a dwarf::UnwindInfo,
}

/// Finds the module mapped at an avma; `None` for unmapped addresses or modules without unwind information.
pub trait ModuleLookup<'a> {
    /// The module containing `avma`.
    fn module_at(&mut self, avma: u64) -> Option<Module<'a>>;
}

impl<'a, F> ModuleLookup<'a> for F
where
    F: FnMut(u64) -> Option<Module<'a>>,
{
    fn module_at(&mut self, avma: u64) -> Option<Module<'a>> {
        self(avma)
    }
}

/// Why an unwind stopped before reaching the outermost frame. Not an error of the run: the frames found so far
/// are still returned (a bad unwind table ends that chain, not the run).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The outermost frame was reached (return address undefined or zero).
    Outermost,
    /// No module is mapped at the frame's address.
    NoModule {
        /// The frame's lookup address.
        avma: u64,
    },
    /// The module has no unwind rule covering the address.
    NoUnwindInfo {
        /// The frame's lookup address.
        avma: u64,
    },
    /// The unwind table could not be parsed or evaluated at this address.
    BadUnwindInfo {
        /// The frame's lookup address.
        avma: u64,
        /// What gimli or the rule evaluator reported.
        message: String,
    },
    /// A saved register lies outside the captured stack bytes.
    StackTooSmall {
        /// The address that could not be read.
        addr: u64,
    },
    /// The caller's return address lies outside the captured stack bytes: the copy was too small for the
    /// whole chain. (perf 6.1 then prints one more frame, `ffffffffffffffff`; other registers saved outside
    /// the copy end the chain silently, as [`StopReason::StackTooSmall`].)
    ReturnAddressOutsideStack {
        /// The address that could not be read.
        addr: u64,
    },
    /// The step needs a register whose value is unknown: not in the sample's register mask, or undefined or
    /// not evaluable by the callee's CFI. (A register saved outside the captured stack gives
    /// [`StopReason::StackTooSmall`] instead.)
    UnknownRegister {
        /// The frame's lookup address.
        avma: u64,
        /// The DWARF register number.
        register: u16,
    },
    /// The next frame's stack pointer did not move up: the unwind would loop.
    StackDidNotGrow,
    /// The maximum number of frames was reached.
    MaxFrames,
}

/// The result of one unwind: frames innermost first, and why it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unwound {
    /// Frames, innermost first; the first is the instruction pointer.
    pub frames: Vec<FrameAddress>,
    /// Why the walk ended.
    pub stop: StopReason,
}

/// Which address space a callchain entry belongs to, from the `PERF_CONTEXT_*` markers the kernel puts in front of
/// each part of a callchain (include/uapi/linux/perf_event.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Context {
    /// `PERF_CONTEXT_HV`.
    Hypervisor,
    /// `PERF_CONTEXT_KERNEL`.
    Kernel,
    /// `PERF_CONTEXT_USER`.
    User,
    /// `PERF_CONTEXT_GUEST`.
    Guest,
    /// `PERF_CONTEXT_GUEST_KERNEL`.
    GuestKernel,
    /// `PERF_CONTEXT_GUEST_USER`.
    GuestUser,
}

/// One frame of a sample's callchain with the context it was found in; `context` is `None` before the first
/// marker (the sample's own cpumode then applies, as in perf).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChainFrame {
    /// The address and whether it is an IP or a return address.
    pub addr: FrameAddress,
    /// The context from the nearest preceding `PERF_CONTEXT_*` marker.
    pub context: Option<Context>,
}

/// Synthetic stacks for the built-in workloads, laid out from their machine code (not from their CFI), shared by
/// the unwinder's and the script's tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::RegsX86_64;
    use object::{Object, ObjectSection, ObjectSymbol};

    /// Address and bytes of a function of the workload.
    pub(crate) fn function(data: &[u8], name: &str) -> (u64, Vec<u8>) {
        let file = object::File::parse(data).unwrap();
        let sym = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
        let text = file.section_by_name(".text").unwrap();
        let off = (sym.address() - text.address()) as usize;
        let bytes = text.data().unwrap()[off..off + sym.size() as usize].to_vec();
        (sym.address(), bytes)
    }

    /// The return address of the `call rel32` in `caller` that targets `callee`, found by decoding the E8
    /// opcode: independent of the CFI under test.
    pub(crate) fn return_address(data: &[u8], caller: &str, callee: &str) -> u64 {
        let (base, code) = function(data, caller);
        let (target, _) = function(data, callee);
        for i in 0..code.len().saturating_sub(4) {
            if code[i] == 0xe8 {
                let rel = i32::from_le_bytes(code[i + 1..i + 5].try_into().unwrap());
                let next = base + i as u64 + 5;
                if next.wrapping_add_signed(rel.into()) == target {
                    return next;
                }
            }
        }
        panic!("no call from {caller} to {callee}");
    }

    /// Bytes a function's prologue pushes or subtracts from RSP before its first call (push r / push r64 with
    /// REX.B / sub rsp,imm8 / sub rsp,imm32), decoded from the code, not taken from the CFI.
    pub(crate) fn frame_size(data: &[u8], name: &str) -> u64 {
        let (_, code) = function(data, name);
        let mut size = 0;
        let mut i = 0;
        loop {
            match code.get(i..).unwrap_or(&[]) {
                [0x50..=0x57, ..] => (size, i) = (size + 8, i + 1),
                [0x41, 0x50..=0x57, ..] => (size, i) = (size + 8, i + 2),
                [0x48, 0x83, 0xec, imm, ..] => (size, i) = (size + u64::from(*imm), i + 4),
                [0x48, 0x81, 0xec, a, b, c, d, ..] => {
                    (size, i) = (
                        size + u64::from(u32::from_le_bytes([*a, *b, *c, *d])),
                        i + 7,
                    )
                }
                [0x48, 0x89, 0xe5, ..] => i += 3, // mov rbp, rsp (frame-pointer builds)
                _ => return size,
            }
        }
    }

    /// A synthetic stack for `main → chain_a → chain_b → chain_c` sampled in chain_c's loop, laid out from the
    /// decoded prologues; main's caller slot holds `outer_ra`.
    pub(crate) fn synthetic(data: &[u8], outer_ra: u64) -> (RegsX86_64, Vec<u8>, u64, Vec<u64>) {
        let sp = 0x7ffc_0000_1000u64;
        let mut words: Vec<u64> = Vec::new();
        let mut expect = Vec::new();
        let (c, _) = function(data, "chain_c");
        let ip = c + 0x20;
        expect.push(ip);
        let chain = [
            ("chain_c", "chain_b"),
            ("chain_b", "chain_a"),
            ("chain_a", "main"),
        ];
        for (callee, caller) in chain {
            let frame = frame_size(data, callee);
            words.extend(std::iter::repeat_n(0x1111_1111u64, (frame / 8) as usize));
            let ra = return_address(data, caller, callee);
            words.push(ra);
            expect.push(ra);
        }
        let frame = frame_size(data, "main");
        words.extend(std::iter::repeat_n(0x2222_2222u64, (frame / 8) as usize));
        words.push(outer_ra);
        // RBP stays 0: in the no-frame-pointer build every CFA rule is RSP-based.
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        (RegsX86_64::new(ip, sp, 0), bytes, sp, expect)
    }
}

#[cfg(test)]
mod tests {
    use super::RegsX86_64;
    use crate::perf::abi::*;

    #[test]
    fn perf_regs_map_to_dwarf_numbers() {
        // All 24 x86_64 perf registers, value = 100 + perf index.
        let mask = (1u64 << PERF_REG_X86_64_MAX) - 1;
        let values: Vec<u64> = (0..u64::from(PERF_REG_X86_64_MAX))
            .map(|i| 100 + i)
            .collect();
        let regs = RegsX86_64::from_perf_regs(mask, &values).unwrap();
        let perf_of_dwarf = [
            PERF_REG_X86_AX,
            PERF_REG_X86_DX,
            PERF_REG_X86_CX,
            PERF_REG_X86_BX,
            PERF_REG_X86_SI,
            PERF_REG_X86_DI,
            PERF_REG_X86_BP,
            PERF_REG_X86_SP,
            16,
            17,
            18,
            19,
            20,
            21,
            22,
            PERF_REG_X86_R15,
            PERF_REG_X86_IP,
        ];
        for (dwarf, perf) in perf_of_dwarf.iter().enumerate() {
            assert_eq!(
                regs.get(dwarf as u16),
                Some(100 + u64::from(*perf)),
                "DWARF {dwarf}"
            );
        }
        assert_eq!((regs.ip, regs.sp, regs.bp), (108, 107, 106));
        assert_eq!(regs.get(17), None);

        // A mask of IP and SP alone still gives registers (everything else unknown); one without SP does not.
        let ip_sp = (1 << PERF_REG_X86_SP) | (1 << PERF_REG_X86_IP);
        let regs = RegsX86_64::from_perf_regs(ip_sp, &[7, 8]).unwrap();
        assert_eq!((regs.sp, regs.ip), (7, 8));
        assert!((0..16).filter(|&r| r != 7).all(|r| !regs.is_known(r)));
        assert_eq!(RegsX86_64::from_perf_regs(1 << PERF_REG_X86_IP, &[8]), None);
        // Values shorter than the mask: IP missing.
        assert_eq!(RegsX86_64::from_perf_regs(ip_sp, &[7]), None);
        assert_eq!(RegsX86_64::from_perf_regs(0, &[]), None);
    }
}
