//! A tiny typed assembler for eBPF: registers, sizes, jump conditions and helpers are enums, jumps go to labels
//! resolved when the program is finished, and a map is referenced by its descriptor (`BPF_PSEUDO_MAP_FD`).
//!
//! Follows the instruction encoding of the kernel's Documentation/bpf/standardization/instruction-set.rst
//! (`struct bpf_insn`: opcode byte, dst/src nibbles, signed 16-bit offset, signed 32-bit immediate). Only the
//! instructions the lock-contention programs need are offered; the verifier, not this module, decides what is safe.

use std::collections::HashMap;

/// A register. R0 holds return values, R1–R5 helper arguments (clobbered by calls), R6–R9 survive calls, R10 is
/// the read-only frame pointer (the stack grows down from it, 512 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Reg {
    R0 = 0,
    R1,
    R2,
    R3,
    R4,
    R5,
    R6,
    R7,
    R8,
    R9,
    R10,
}

/// The frame pointer.
pub const FP: Reg = Reg::R10;

/// Width of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// 1 byte.
    B,
    /// 2 bytes.
    H,
    /// 4 bytes.
    W,
    /// 8 bytes.
    DW,
}

impl Size {
    fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
}

/// A 64-bit ALU operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Mov = 0xb0,
}

/// A conditional jump's comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Cond {
    Eq = 0x10,
    /// Unsigned greater than.
    Gt = 0x20,
    /// Unsigned greater or equal.
    Ge = 0x30,
    Ne = 0x50,
    /// Signed greater than.
    Sgt = 0x60,
    /// Unsigned less than.
    Lt = 0xa0,
    /// Signed less than.
    Slt = 0xc0,
}

/// A kernel helper function (include/uapi/linux/bpf.h, `__BPF_FUNC_MAPPER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Helper {
    MapLookupElem = 1,
    MapUpdateElem = 2,
    MapDeleteElem = 3,
    KtimeGetNs = 5,
    GetSmpProcessorId = 8,
    GetCurrentPidTgid = 14,
    GetCurrentComm = 16,
    GetStackid = 27,
    /// The current `task_struct` as a plain number (4.8).
    GetCurrentTask = 35,
    /// Copy kernel memory that may fault (5.5).
    ProbeReadKernel = 113,
    /// A per-CPU variable's address on a CPU (5.10; needs the variable's BTF id).
    PerCpuPtr = 153,
}

/// A jump target; make one with [`Asm::label`], place it with [`Asm::bind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label(u32);

/// One encoded instruction (`struct bpf_insn`, 8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// Destination register (low nibble) and source register (high nibble).
    pub regs: u8,
    /// Offset (memory or jump).
    pub off: i16,
    /// Immediate.
    pub imm: i32,
}

impl Insn {
    fn new(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Self {
        Insn {
            code,
            regs: (dst as u8) | ((src as u8) << 4),
            off,
            imm,
        }
    }

    /// The instruction as the kernel reads it (little-endian host assumed, as everywhere BPF runs here).
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = self.regs;
        b[2..4].copy_from_slice(&self.off.to_ne_bytes());
        b[4..8].copy_from_slice(&self.imm.to_ne_bytes());
        b
    }
}

// Instruction classes and modes (instruction-set.rst).
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const K: u8 = 0x00;
const X: u8 = 0x08;
const IMM: u8 = 0x00;
const MEM: u8 = 0x60;
const ATOMIC: u8 = 0xc0;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
const JA: u8 = 0x00;
/// `src_reg` of a 64-bit immediate load whose immediate is a map descriptor.
const PSEUDO_MAP_FD: u8 = 1;
const PSEUDO_BTF_ID: u8 = 3;

/// Why a program could not be assembled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AsmError {
    /// A label was jumped to but never bound.
    #[error("BPF assembler: label {0} used but never bound")]
    Unbound(u32),
    /// A jump is farther than a 16-bit offset reaches.
    #[error("BPF assembler: jump from instruction {0} out of range")]
    JumpRange(usize),
}

/// The assembler: append instructions, then [`Asm::finish`].
#[derive(Debug, Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    fixups: HashMap<usize, Label>,
}

impl Asm {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, insn: Insn) -> &mut Self {
        self.insns.push(insn);
        self
    }

    /// A fresh, unbound label.
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() as u32 - 1)
    }

    /// Places `label` at the next instruction.
    pub fn bind(&mut self, label: Label) -> &mut Self {
        self.labels[label.0 as usize] = Some(self.insns.len());
        self
    }

    /// `dst = imm` (sign-extended to 64 bits).
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.alu_imm(Alu::Mov, dst, imm)
    }

    /// `dst = src`.
    pub fn mov(&mut self, dst: Reg, src: Reg) -> &mut Self {
        self.alu(Alu::Mov, dst, src)
    }

    /// `dst op= imm` (64-bit).
    pub fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) -> &mut Self {
        self.push(Insn::new(ALU64 | K | op as u8, dst, Reg::R0, 0, imm))
    }

    /// `dst op= src` (64-bit).
    pub fn alu(&mut self, op: Alu, dst: Reg, src: Reg) -> &mut Self {
        self.push(Insn::new(ALU64 | X | op as u8, dst, src, 0, 0))
    }

    /// `dst = *(size *)(src + off)`.
    pub fn ldx(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Self {
        self.push(Insn::new(LDX | MEM | size.bits(), dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = src`.
    pub fn stx(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Self {
        self.push(Insn::new(STX | MEM | size.bits(), dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn st_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Self {
        self.push(Insn::new(ST | MEM | size.bits(), dst, Reg::R0, off, imm))
    }

    /// `lock *(size *)(dst + off) += src` (W or DW only; the kernel's `BPF_ATOMIC | BPF_ADD`, once `BPF_XADD`).
    pub fn atomic_add(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Self {
        self.push(Insn::new(STX | ATOMIC | size.bits(), dst, src, off, 0))
    }

    /// `dst = 64-bit imm` (two instruction slots).
    pub fn ld_imm64(&mut self, dst: Reg, imm: u64) -> &mut Self {
        self.push(Insn::new(
            LD | IMM | Size::DW.bits(),
            dst,
            Reg::R0,
            0,
            imm as u32 as i32,
        ));
        self.push(Insn::new(0, Reg::R0, Reg::R0, 0, (imm >> 32) as u32 as i32))
    }

    /// `dst = &map` for the map open as descriptor `fd` (the verifier swaps the descriptor for the map).
    pub fn ld_map_fd(&mut self, dst: Reg, fd: i32) -> &mut Self {
        let mut first = Insn::new(LD | IMM | Size::DW.bits(), dst, Reg::R0, 0, fd);
        first.regs |= PSEUDO_MAP_FD << 4;
        self.push(first);
        self.push(Insn::new(0, Reg::R0, Reg::R0, 0, 0))
    }

    /// `dst = &kernel variable` by its id in the kernel's BTF (`BPF_PSEUDO_BTF_ID`, 5.10): the kernel resolves
    /// the address through kallsyms, so a variable kallsyms does not list is refused at load.
    pub fn ld_btf_id(&mut self, dst: Reg, btf_id: u32) -> &mut Self {
        let mut first = Insn::new(LD | IMM | Size::DW.bits(), dst, Reg::R0, 0, btf_id as i32);
        first.regs |= PSEUDO_BTF_ID << 4;
        self.push(first);
        self.push(Insn::new(0, Reg::R0, Reg::R0, 0, 0))
    }

    /// `if (reg cond imm) goto target`.
    pub fn jmp_imm(&mut self, cond: Cond, reg: Reg, imm: i32, target: Label) -> &mut Self {
        self.fixups.insert(self.insns.len(), target);
        self.push(Insn::new(JMP | K | cond as u8, reg, Reg::R0, 0, imm))
    }

    /// `if (dst cond src) goto target`.
    pub fn jmp(&mut self, cond: Cond, dst: Reg, src: Reg, target: Label) -> &mut Self {
        self.fixups.insert(self.insns.len(), target);
        self.push(Insn::new(JMP | X | cond as u8, dst, src, 0, 0))
    }

    /// `goto target`.
    pub fn ja(&mut self, target: Label) -> &mut Self {
        self.fixups.insert(self.insns.len(), target);
        self.push(Insn::new(JMP | JA, Reg::R0, Reg::R0, 0, 0))
    }

    /// `r0 = helper(r1, .., r5)`; R1–R5 are clobbered.
    pub fn call(&mut self, helper: Helper) -> &mut Self {
        self.push(Insn::new(JMP | CALL, Reg::R0, Reg::R0, 0, helper as i32))
    }

    /// `return r0`.
    pub fn exit(&mut self) -> &mut Self {
        self.push(Insn::new(JMP | EXIT, Reg::R0, Reg::R0, 0, 0))
    }

    /// Resolves the jumps and gives the instructions.
    pub fn finish(mut self) -> Result<Vec<Insn>, AsmError> {
        for (&at, &label) in &self.fixups {
            let target = self.labels[label.0 as usize].ok_or(AsmError::Unbound(label.0))?;
            let off = target as i64 - at as i64 - 1;
            self.insns[at].off = i16::try_from(off).map_err(|_| AsmError::JumpRange(at))?;
        }
        Ok(self.insns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_the_kernel_documents() {
        let mut a = Asm::new();
        let out = a.label();
        a.mov_imm(Reg::R0, 0) // b7 00 0000 00000000
            .ldx(Size::DW, Reg::R1, Reg::R6, 8) // 79 61 0800
            .stx(Size::W, FP, -4, Reg::R1) // 63 1a fcff
            .jmp_imm(Cond::Eq, Reg::R0, 0, out) // 15 00 0100
            .call(Helper::KtimeGetNs) // 85 00 0000 05000000
            .bind(out)
            .exit(); // 95
        let bytes: Vec<[u8; 8]> = a
            .finish()
            .unwrap()
            .into_iter()
            .map(Insn::to_bytes)
            .collect();
        assert_eq!(bytes[0], [0xb7, 0x00, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes[1], [0x79, 0x61, 8, 0, 0, 0, 0, 0]);
        assert_eq!(bytes[2], [0x63, 0x1a, 0xfc, 0xff, 0, 0, 0, 0]);
        assert_eq!(bytes[3], [0x15, 0x00, 1, 0, 0, 0, 0, 0]);
        assert_eq!(bytes[4], [0x85, 0x00, 0, 0, 5, 0, 0, 0]);
        assert_eq!(bytes[5], [0x95, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn map_loads_take_two_slots_and_mark_the_descriptor() {
        let mut a = Asm::new();
        a.ld_map_fd(Reg::R1, 7).exit();
        let insns = a.finish().unwrap();
        assert_eq!(insns.len(), 3);
        assert_eq!(insns[0].to_bytes(), [0x18, 0x11, 0, 0, 7, 0, 0, 0]);
        assert_eq!(insns[1].to_bytes(), [0; 8]);
    }

    #[test]
    fn backward_jumps_and_unbound_labels() {
        let mut a = Asm::new();
        let top = a.label();
        a.bind(top).mov_imm(Reg::R0, 1).ja(top);
        assert_eq!(a.finish().unwrap()[1].off, -2);
        let mut b = Asm::new();
        let nowhere = b.label();
        b.ja(nowhere);
        assert_eq!(b.finish(), Err(AsmError::Unbound(0)));
    }
}
