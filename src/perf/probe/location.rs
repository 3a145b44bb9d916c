//! From a variable's DWARF location at one address to a tracefs fetcharg (Documentation/trace/uprobetracer.rst):
//! registers become `%ax`-style names, memory `OFF(BASE)`, globals `@+FILEOFFSET` (uprobes) or `@sym` (kprobes),
//! members and pointer chains nested `+OFF(...)`, strings `+0(PTR):string`.
//!
//! What a probe cannot fetch is refused with the reason and the DWARF location, never approximated: perf 6.1
//! takes the first operation of a computed value (`DW_OP_breg5 0; DW_OP_lit1; DW_OP_plus; DW_OP_stack_value`) as
//! the variable's address and prints a wrong number.

use super::dwarf::{DebugInfo, R};
use super::spec::{Field, VarArg};
use gimli::{AttributeValue, Operation};
use std::fmt::Write as _;

/// A fetch in tracefs syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetch {
    /// The value of a register.
    Reg(u16),
    /// The memory at `off` bytes from the value of `of`.
    Deref {
        /// Byte offset.
        off: i64,
        /// The address's base.
        of: Box<Fetch>,
    },
    /// The memory at a file offset of the probed binary (uprobes).
    FileOffset(i64),
    /// The memory at a kernel symbol plus an offset (kprobes).
    Symbol(String, i64),
    /// A constant (the kernel's `\IMM`, since v5.7).
    Immediate(i64),
}

/// x86-64 DWARF register numbers (System V psABI, figure 3.36) in the kernel's pt_regs names.
pub fn register_name(reg: u16) -> Option<&'static str> {
    const NAMES: [&str; 17] = [
        "ax", "dx", "cx", "bx", "si", "di", "bp", "sp", "r8", "r9", "r10", "r11", "r12", "r13",
        "r14", "r15", "ip",
    ];
    NAMES.get(usize::from(reg)).copied()
}

impl std::fmt::Display for Fetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fetch::Reg(r) => write!(f, "%{}", register_name(*r).unwrap_or("?")),
            Fetch::Deref { off, of } => write!(f, "{off:+}({of})"),
            Fetch::FileOffset(o) => write!(f, "@+{o:#x}"),
            Fetch::Symbol(s, 0) => write!(f, "@{s}"),
            Fetch::Symbol(s, o) => write!(f, "@{s}{o:+}"),
            Fetch::Immediate(v) => write!(f, "\\{v}"),
        }
    }
}

impl Fetch {
    /// The same memory `delta` bytes further (a `.member` of a struct that lives in memory).
    fn shifted(self, delta: i64) -> Option<Fetch> {
        match self {
            Fetch::Deref { off, of } => Some(Fetch::Deref {
                off: off + delta,
                of,
            }),
            Fetch::FileOffset(o) => Some(Fetch::FileOffset(o + delta)),
            Fetch::Symbol(s, o) => Some(Fetch::Symbol(s, o + delta)),
            Fetch::Reg(_) | Fetch::Immediate(_) => None,
        }
    }
}

/// Whether the probe is a uprobe (globals by file offset) or a kprobe (globals by symbol).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// A user binary.
    User,
    /// The kernel.
    Kernel,
}

/// A variable found in scope: its DIE.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VarDie {
    pub unit: usize,
    pub die: usize,
}

/// A translated argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceArg {
    /// The fetcharg's name in tracefs.
    pub name: String,
    /// The fetch.
    pub fetch: String,
    /// The type suffix (`s32`, `x64`, `string`, ...), when there is one.
    pub ty: Option<String>,
}

impl std::fmt::Display for TraceArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // An unnamed fetcharg gets the kernel's `argN` name, as perf leaves `$retval` and raw fetchargs.
        if !self.name.is_empty() {
            write!(f, "{}=", self.name)?;
        }
        write!(f, "{}", self.fetch)?;
        if let Some(t) = &self.ty {
            write!(f, ":{t}")?;
        }
        Ok(())
    }
}

/// Text of a DWARF expression as readelf/objdump print it, for refusals.
pub(crate) fn expression_text(di: &DebugInfo, unit: usize, expr: &gimli::Expression<R>) -> String {
    let encoding = di.unit(unit).encoding();
    let mut ops = expr.clone().operations(encoding);
    let mut out = Vec::new();
    while let Ok(Some(op)) = ops.next() {
        out.push(match op {
            Operation::Register { register } => {
                format!(
                    "DW_OP_reg{} ({})",
                    register.0,
                    register_name(register.0).unwrap_or("?")
                )
            }
            Operation::RegisterOffset {
                register, offset, ..
            } => format!(
                "DW_OP_breg{} ({}) {offset}",
                register.0,
                register_name(register.0).unwrap_or("?")
            ),
            Operation::FrameOffset { offset } => format!("DW_OP_fbreg {offset}"),
            Operation::Address { address } => format!("DW_OP_addr {address:#x}"),
            Operation::StackValue => "DW_OP_stack_value".into(),
            Operation::EntryValue { expression } => {
                format!(
                    "DW_OP_entry_value({})",
                    expression_text(di, unit, &gimli::Expression(expression))
                )
            }
            Operation::Piece {
                size_in_bits,
                bit_offset,
            } => match bit_offset {
                Some(b) => format!("DW_OP_bit_piece {size_in_bits} {b}"),
                None => format!("DW_OP_piece {}", size_in_bits / 8),
            },
            Operation::UnsignedConstant { value } => format!("DW_OP_const {value}"),
            Operation::SignedConstant { value } => format!("DW_OP_consts {value}"),
            Operation::PlusConstant { value } => format!("DW_OP_plus_uconst {value}"),
            Operation::Plus => "DW_OP_plus".into(),
            Operation::Minus => "DW_OP_minus".into(),
            Operation::Mul => "DW_OP_mul".into(),
            Operation::Shl => "DW_OP_shl".into(),
            Operation::Neg => "DW_OP_neg".into(),
            Operation::And => "DW_OP_and".into(),
            Operation::Deref { .. } => "DW_OP_deref".into(),
            Operation::CallFrameCFA => "DW_OP_call_frame_cfa".into(),
            Operation::ImplicitValue { .. } => "DW_OP_implicit_value".into(),
            Operation::ImplicitPointer { .. } => "DW_OP_implicit_pointer".into(),
            other => format!("{other:?}"),
        });
    }
    out.join("; ")
}

/// The variable's location expression at `addr`: `Ok(None)` when it has none there (optimized out).
pub(crate) fn location_at(
    di: &DebugInfo,
    var: VarDie,
    addr: u64,
) -> Result<Option<gimli::Expression<R>>, String> {
    let e = di.entry(var.unit, var.die);
    let u = &di.unit(var.unit);
    let Some(attr) = e.attr_value(gimli::DW_AT_location) else {
        return Ok(None);
    };
    match attr {
        AttributeValue::Exprloc(expr) => Ok(Some(expr)),
        other => {
            let mut it = match di.dwarf.attr_locations(u, other) {
                Ok(Some(it)) => it,
                Ok(None) => return Err("a location of an unknown form".into()),
                Err(e) => return Err(format!("a location list gimli can't read ({e})")),
            };
            while let Ok(Some(entry)) = it.next() {
                if addr >= entry.range.begin && addr < entry.range.end {
                    return Ok(Some(entry.data));
                }
            }
            Ok(None)
        }
    }
}

/// The entries of a variable's location list (`[begin, end)` and the expression), or `None` for a single
/// location (an exprloc) or none at all.
pub(crate) fn location_list(
    di: &DebugInfo,
    var: VarDie,
) -> Option<Vec<(u64, u64, gimli::Expression<R>)>> {
    let e = di.entry(var.unit, var.die);
    let attr = e.attr_value(gimli::DW_AT_location)?;
    if matches!(attr, AttributeValue::Exprloc(_)) {
        return None;
    }
    let unit = di.unit(var.unit);
    let mut it = di.dwarf.attr_locations(unit, attr).ok()??;
    // Raw entries, so that an empty range stays in the list as libdw (and so perf's --range) shows it;
    // gimli's own conversion drops them.
    let addr = |i| di.dwarf.address(unit, i).ok();
    let mut base = unit.low_pc;
    let mut out = Vec::new();
    while let Ok(Some(raw)) = it.next_raw() {
        use gimli::RawLocListEntry as E;
        let (begin, end, data) = match raw {
            E::BaseAddress { addr } => {
                base = addr;
                continue;
            }
            E::BaseAddressx { addr: i } => {
                base = addr(i)?;
                continue;
            }
            E::StartxEndx { begin, end, data } => (addr(begin)?, addr(end)?, data),
            E::StartxLength {
                begin,
                length,
                data,
            } => {
                let b = addr(begin)?;
                (b, b.wrapping_add(length), data)
            }
            E::AddressOrOffsetPair { begin, end, data } | E::OffsetPair { begin, end, data } => {
                (base.wrapping_add(begin), base.wrapping_add(end), data)
            }
            E::StartEnd { begin, end, data } => (begin, end, data),
            E::StartLength {
                begin,
                length,
                data,
            } => (begin, begin.wrapping_add(length), data),
            E::DefaultLocation { data } => (0, u64::MAX, data),
        };
        if begin > end || begin == 0 && end == 0 {
            continue;
        }
        out.push((begin, end, data));
    }
    Some(out)
}

/// Why a location can't be fetched, or the fetch of the variable's value.
pub(crate) fn translate_location(
    di: &DebugInfo,
    var: VarDie,
    function: Option<(usize, usize)>,
    addr: u64,
    space: Space,
) -> Result<Fetch, String> {
    let e = di.entry(var.unit, var.die);
    if let Some(v) = e.attr_value(gimli::DW_AT_const_value) {
        return match v {
            AttributeValue::Sdata(n) => Ok(Fetch::Immediate(n)),
            v => DebugInfo::udata(&v)
                .and_then(|n| i64::try_from(n).ok())
                .map(Fetch::Immediate)
                .ok_or_else(|| "a constant (DW_AT_const_value) that is not an integer".into()),
        };
    }
    let expr = match location_at(di, var, addr)? {
        Some(e) => e,
        None => {
            return Err(format!(
                "optimized out at {addr:#x} (no location covers this address)"
            ))
        }
    };
    let text = expression_text(di, var.unit, &expr);
    let encoding = di.unit(var.unit).encoding();
    let mut ops = Vec::new();
    let mut it = expr.operations(encoding);
    loop {
        match it.next() {
            Ok(Some(op)) => ops.push(op),
            Ok(None) => break,
            Err(e) => return Err(format!("an unreadable location ({e})")),
        }
    }
    if let Some(why) = unfetchable(&ops) {
        return Err(format!("{why} at {addr:#x} [{text}]"));
    }
    fetch_of(di, var, &ops, function, addr, space)
        .map_err(|why| format!("{why} at {addr:#x} [{text}]"))
        .and_then(|f| f.map_err(|e| format!("{e} [{text}]")))
}

/// Why a location made of `ops` has no one place a fetcharg could read, if it has none.
fn unfetchable(ops: &[Operation<R>]) -> Option<&'static str> {
    if ops.is_empty() {
        return Some("optimized out (empty location)");
    }
    if ops
        .iter()
        .any(|o| matches!(o, Operation::EntryValue { .. }))
    {
        return Some(
            "an entry value (the value at function entry, kept in no register or memory here)",
        );
    }
    if ops.iter().any(|o| matches!(o, Operation::Piece { .. })) {
        return Some("split into pieces (DW_OP_piece; a fetcharg reads one place)");
    }
    if ops
        .iter()
        .any(|o| matches!(o, Operation::ImplicitPointer { .. }))
    {
        return Some("an implicit pointer (the pointed-to value exists only in DWARF)");
    }
    None
}

/// The fetch of the location `ops` at `addr`: `Err` says why the expression has no fetch (the caller adds
/// where), the inner `Err` why its register or frame base has none.
fn fetch_of(
    di: &DebugInfo,
    var: VarDie,
    ops: &[Operation<R>],
    function: Option<(usize, usize)>,
    addr: u64,
    space: Space,
) -> Result<Result<Fetch, String>, &'static str> {
    Ok(match ops {
        [Operation::Register { register }] => reg(register.0),
        [Operation::RegisterOffset {
            register, offset, ..
        }] => reg(register.0).map(|r| Fetch::Deref {
            off: *offset,
            of: Box::new(r),
        }),
        // The value of a register plus nothing: the register itself.
        [Operation::RegisterOffset {
            register,
            offset: 0,
            ..
        }, Operation::StackValue] => reg(register.0),
        [Operation::FrameOffset { offset }] => match frame_base(di, function, addr) {
            Err(e) => Err(e),
            Ok(Fetch::Reg(r)) => Ok(Fetch::Deref {
                off: *offset,
                of: Box::new(Fetch::Reg(r)),
            }),
            Ok(Fetch::Deref { off, of }) => Ok(Fetch::Deref {
                off: off + offset,
                of,
            }),
            Ok(_) => return Err("a frame base that is not a register plus offset"),
        },
        [Operation::Address { address }] => match space {
            Space::User => di
                .global_file_offset(*address)
                .and_then(|o| i64::try_from(o).ok())
                .map(Fetch::FileOffset)
                .ok_or_else(|| format!("a global at {address:#x} outside the loaded segments")),
            Space::Kernel => Ok(Fetch::Symbol(
                di.name(var.unit, var.die).unwrap_or_default(),
                0,
            )),
        },
        [.., Operation::StackValue] => {
            return Err("a computed value (DW_OP_stack_value: the value is the result of arithmetic, not a register or memory a probe can read)");
        }
        [Operation::ImplicitValue { .. }] => {
            return Err("an implicit value (DW_OP_implicit_value)")
        }
        _ => return Err("a location expression a fetcharg can't express"),
    })
}

fn reg(r: u16) -> Result<Fetch, String> {
    if register_name(r).is_some() && r != 16 {
        Ok(Fetch::Reg(r))
    } else {
        Err(format!("DWARF register {r} has no pt_regs name"))
    }
}

/// The frame base of the function containing the probe, as a "register plus offset" where the memory at
/// `fbreg N` is `Deref{off + N, reg}` (a `Reg` base means the register's value is the base).
fn frame_base(
    di: &DebugInfo,
    function: Option<(usize, usize)>,
    addr: u64,
) -> Result<Fetch, String> {
    let Some((unit, f)) = function else {
        return Err("DW_OP_fbreg outside a function".into());
    };
    let e = di.entry(unit, f);
    let Some(AttributeValue::Exprloc(expr)) = e.attr_value(gimli::DW_AT_frame_base) else {
        return Err("DW_OP_fbreg in a function without DW_AT_frame_base".into());
    };
    let encoding = di.unit(unit).encoding();
    let mut it = expr.operations(encoding);
    let mut ops = Vec::new();
    while let Ok(Some(op)) = it.next() {
        ops.push(op);
    }
    match ops.as_slice() {
        [Operation::CallFrameCFA] => cfa(di, addr),
        [Operation::Register { register }] => reg(register.0),
        [Operation::RegisterOffset {
            register, offset, ..
        }] => Ok(Fetch::Deref {
            off: *offset,
            of: Box::new(reg(register.0)?),
        }),
        _ => Err("a frame base expression a fetcharg can't express".into()),
    }
}

/// The CFA at `addr` from .eh_frame (or .debug_frame): register plus offset.
fn cfa(di: &DebugInfo, addr: u64) -> Result<Fetch, String> {
    use gimli::UnwindSection;
    let mut ctx = Box::new(gimli::UnwindContext::new());
    let rule = if let Some((eh, bases)) = &di.eh_frame {
        eh.unwind_info_for_address(bases, &mut ctx, addr, gimli::EhFrame::cie_from_offset)
            .ok()
            .map(|row| row.cfa().clone())
    } else {
        None
    };
    let rule = match rule {
        Some(r) => Some(r),
        None => di.debug_frame.as_ref().and_then(|df| {
            df.unwind_info_for_address(
                &gimli::BaseAddresses::default(),
                &mut ctx,
                addr,
                gimli::DebugFrame::cie_from_offset,
            )
            .ok()
            .map(|row| row.cfa().clone())
        }),
    };
    match rule {
        Some(gimli::CfaRule::RegisterAndOffset { register, offset }) => Ok(Fetch::Deref {
            off: offset,
            of: Box::new(reg(register.0)?),
        }),
        Some(gimli::CfaRule::Expression(_)) => Err("a CFA given by an expression".into()),
        None => Err(format!("no call frame information covers {addr:#x}")),
    }
}

/// A type with typedefs and qualifiers stripped.
pub(crate) fn real_type(di: &DebugInfo, unit: usize, mut die: Option<usize>) -> Option<usize> {
    for _ in 0..16 {
        let d = die?;
        let tag = di.dies(unit)[d].tag;
        if matches!(
            tag,
            gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type
        ) {
            die = type_of(di, unit, d);
        } else {
            return Some(d);
        }
    }
    None
}

/// The DIE of DW_AT_type.
pub(crate) fn type_of(di: &DebugInfo, unit: usize, die: usize) -> Option<usize> {
    match di.origin_attr(unit, die, gimli::DW_AT_type)? {
        (u, AttributeValue::UnitRef(off)) if u == unit => di
            .dies(unit)
            .binary_search_by_key(&off.0, |d| d.offset.0)
            .ok(),
        _ => None,
    }
}

fn byte_size(di: &DebugInfo, unit: usize, die: usize) -> Option<u64> {
    di.entry(unit, die)
        .attr_value(gimli::DW_AT_byte_size)
        .and_then(|v| DebugInfo::udata(&v))
}

/// A type's name as perf's `die_get_typename` prints it (`int`, `char*`, `struct point*`; qualifiers dropped).
pub(crate) fn type_name(di: &DebugInfo, unit: usize, die: Option<usize>) -> String {
    let Some(d) = die else {
        return "void".into();
    };
    let tag = di.dies(unit)[d].tag;
    let name = di.name(unit, d);
    match tag {
        gimli::DW_TAG_pointer_type => format!("{}*", type_name(di, unit, type_of(di, unit, d))),
        gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type | gimli::DW_TAG_restrict_type => {
            type_name(di, unit, type_of(di, unit, d))
        }
        gimli::DW_TAG_structure_type => format!("struct {}", name.unwrap_or_default()),
        gimli::DW_TAG_union_type => format!("union {}", name.unwrap_or_default()),
        gimli::DW_TAG_enumeration_type => format!("enum {}", name.unwrap_or_default()),
        gimli::DW_TAG_array_type => format!("{}[]", type_name(di, unit, type_of(di, unit, d))),
        // perf's die_get_typename fails on an unnamed type (a C++ reference, say) and prints its fallback.
        _ => name.unwrap_or_else(|| "(unknown_type)".into()),
    }
}

fn signed(di: &DebugInfo, unit: usize, die: usize) -> bool {
    di.dies(unit)[die].tag == gimli::DW_TAG_base_type
        && matches!(
            di.entry(unit, die).attr_value(gimli::DW_AT_encoding),
            Some(AttributeValue::Encoding(
                gimli::DW_ATE_signed | gimli::DW_ATE_signed_char
            ))
        )
}

fn is_char(di: &DebugInfo, unit: usize, die: Option<usize>) -> bool {
    let Some(d) = real_type(di, unit, die) else {
        return false;
    };
    di.dies(unit)[d].tag == gimli::DW_TAG_base_type
        && matches!(
            di.name(unit, d).as_deref(),
            Some("char" | "unsigned char" | "signed char")
        )
}

/// A member of a struct or union: its offset and its DIE.
fn member(di: &DebugInfo, unit: usize, st: usize, name: &str) -> Option<(i64, usize)> {
    for c in di.children(unit, st).collect::<Vec<_>>() {
        if di.dies(unit)[c].tag != gimli::DW_TAG_member {
            continue;
        }
        let cname = di.name(unit, c);
        let off = di
            .entry(unit, c)
            .attr_value(gimli::DW_AT_data_member_location)
            .and_then(|v| DebugInfo::udata(&v))
            .unwrap_or(0) as i64;
        if cname.as_deref() == Some(name) {
            return Some((off, c));
        }
        // An anonymous struct/union member holds its members at its own offset.
        if cname.is_none() {
            if let Some(inner) = real_type(di, unit, type_of(di, unit, c)) {
                if let Some((o, m)) = member(di, unit, inner, name) {
                    return Some((off + o, m));
                }
            }
        }
    }
    None
}

/// Translates `arg` for the variable `var` at `addr`: the value, member accesses, and the type suffix.
pub(crate) fn translate_arg(
    di: &DebugInfo,
    var: VarDie,
    function: Option<(usize, usize)>,
    addr: u64,
    arg: &VarArg,
    space: Space,
) -> Result<TraceArg, String> {
    let unit = var.unit;
    let mut fetch = translate_location(di, var, function, addr, space)?;
    let mut ty = type_of(di, unit, var.die);
    let mut what = arg.var.clone();
    for field in &arg.fields {
        let m;
        (fetch, m) = member_access(di, unit, fetch, ty, &what, field)?;
        ty = type_of(di, unit, m);
        what.push_str(if field.arrow { "->" } else { "." });
        what.push_str(&field.name);
    }
    let t = real_type(di, unit, ty);
    let suffix = match arg.ty.as_deref() {
        Some(s @ ("string" | "ustring")) => {
            fetch = string_fetch(di, unit, t, fetch, &what)?;
            Some(s.to_string())
        }
        Some(s) if s.len() > 1 => Some(s.to_string()),
        cast => {
            let bits = t
                .and_then(|t| byte_size(di, unit, t))
                .map(|b| (b * 8).min(64));
            match bits {
                Some(bits) => {
                    let prefix = match cast {
                        Some(c) => c.to_string(),
                        None if t.is_some_and(|t| signed(di, unit, t)) => "s".into(),
                        None => "x".into(),
                    };
                    Some(format!("{prefix}{bits}"))
                }
                None => None,
            }
        }
    };
    let mut name = arg.trace_name();
    name = name.replace(|c: char| !(c.is_ascii_alphanumeric() || c == '_'), "_");
    let mut fetch_text = String::new();
    let _ = write!(fetch_text, "{fetch}");
    Ok(TraceArg {
        name,
        fetch: fetch_text,
        ty: suffix,
    })
}

/// One member access of an argument (`what` of type `ty`, fetched by `fetch`, then `->field` or `.field`): the
/// member's fetch and its DIE.
fn member_access(
    di: &DebugInfo,
    unit: usize,
    fetch: Fetch,
    ty: Option<usize>,
    what: &str,
    field: &Field,
) -> Result<(Fetch, usize), String> {
    let t = real_type(di, unit, ty).ok_or_else(|| format!("`{what}` has no type information"))?;
    let tag = di.dies(unit)[t].tag;
    let st = if field.arrow {
        if tag != gimli::DW_TAG_pointer_type {
            return Err(format!(
                "`{what}` is a `{}`, not a pointer; use `{what}.{}`",
                type_name(di, unit, Some(t)),
                field.name
            ));
        }
        real_type(di, unit, type_of(di, unit, t))
    } else {
        if tag == gimli::DW_TAG_pointer_type {
            return Err(format!(
                "`{what}` is a pointer; use `{what}->{}`",
                field.name
            ));
        }
        Some(t)
    };
    let st = st.filter(|&s| {
        matches!(
            di.dies(unit)[s].tag,
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type
        )
    });
    let Some(st) = st else {
        return Err(format!(
            "`{what}` is not a struct or union (or a pointer to one)"
        ));
    };
    let Some((off, m)) = member(di, unit, st, &field.name) else {
        return Err(format!(
            "`{}` has no member `{}`",
            type_name(di, unit, Some(st)),
            field.name
        ));
    };
    let fetch = if field.arrow {
        Fetch::Deref {
            off,
            of: Box::new(fetch),
        }
    } else {
        fetch.shifted(off).ok_or_else(|| {
            format!("`{what}` is a struct held in a register; its members can't be fetched")
        })?
    };
    Ok((fetch, m))
}

/// The fetch of a `:string` argument (`what`, of real type `t`): a char pointer's target, or a char array in
/// memory.
fn string_fetch(
    di: &DebugInfo,
    unit: usize,
    t: Option<usize>,
    fetch: Fetch,
    what: &str,
) -> Result<Fetch, String> {
    let Some(t) = t else {
        return Err(format!("`{what}` has no type information"));
    };
    let fetch = match di.dies(unit)[t].tag {
        gimli::DW_TAG_pointer_type => Fetch::Deref {
            off: 0,
            of: Box::new(fetch),
        },
        gimli::DW_TAG_array_type => {
            if matches!(fetch, Fetch::Reg(_) | Fetch::Immediate(_)) {
                return Err(format!("`{what}` is an array held in a register"));
            }
            fetch
        }
        _ => {
            return Err(format!(
                "`{what}` is a `{}`, not a pointer or array; it can't be read as a string",
                type_name(di, unit, Some(t))
            ))
        }
    };
    if !is_char(di, unit, type_of(di, unit, t)) {
        return Err(format!(
            "`{what}` is not a (unsigned) char pointer or array; it can't be read as a string"
        ));
    }
    Ok(fetch)
}
