//! What `bport probe` shows without defining anything: `-L` (lines that can be probed), `-V` (variables that can
//! be fetched), `-F` (functions) and the points of `-l`, each as perf 6.1 prints it (util/probe-event.c
//! `__show_line_range`, `show_available_vars`, `find_perf_probe_point`).

use super::dwarf::DebugInfo;
use super::location::{self, Space, VarDie};
use super::spec::Spec;
use super::{sites, tracefs, visible_vars, Error};
use std::path::Path;

/// The point of an address as perf's `-l` shows it: `FUNC[:RELLINE]@FILE`, or `FUNC+OFFSET` when no line is
/// known (perf's find_perf_probe_point).
pub(crate) fn point_of(di: &DebugInfo, unit: usize, addr: u64) -> Option<String> {
    let f = di.real_function_at(unit, addr)?;
    let name = di.name(unit, f)?;
    let entry = di.entry_pc(unit, f)?;
    let decl = di.decl_line(unit, f)?;
    let decl_file = di.file_attr(unit, f, gimli::DW_AT_decl_file)?;
    if addr == entry {
        return Some(format!("{name}@{decl_file}"));
    }
    let (mut fname, mut lineno) = di.line_at(unit, addr)?;
    let (mut func, mut base, mut base_file) = (name.clone(), decl, decl_file);
    // Into inlined copies: at a copy's entry the line is its call site, inside it relative to the copy.
    for &s in di.scopes_at(unit, f, addr).iter().skip(1) {
        if di.dies(unit)[s].tag != gimli::DW_TAG_inlined_subroutine {
            continue;
        }
        if di.entry_pc(unit, s) == Some(addr) {
            lineno = di
                .entry(unit, s)
                .attr_value(gimli::DW_AT_call_line)
                .and_then(|v| DebugInfo::udata(&v))
                .unwrap_or(lineno);
            fname = di
                .file_attr(unit, s, gimli::DW_AT_call_file)
                .unwrap_or(fname);
            break;
        }
        match (di.name(unit, s), di.decl_line(unit, s)) {
            (Some(n), Some(d)) => {
                func = n;
                base = d;
                base_file = di
                    .file_attr(unit, s, gimli::DW_AT_decl_file)
                    .unwrap_or_default();
            }
            _ => break,
        }
    }
    if base_file != fname || lineno < base {
        return Some(format!("{name}+{}", addr - entry));
    }
    Some(format!("{func}:{}@{fname}", lineno - base))
}

/// perf's default `--filter` of `-V` (DEFAULT_VAR_FILTER): the kernel's symbol-table bookkeeping left out.
pub const DEFAULT_VAR_FILTER: &str = "!__k???tab_* & !__crc_*";

/// How `-V --range` marks a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// A global (`--externs`).
    Ext,
    /// It has no location bport can fetch at the point.
    Inv,
    /// It can be fetched at the point.
    Val,
}

/// A line of `-V`: a variable and its type (with `--range`, its mark and where it has a location).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AvailableVar {
    /// `int`, `char*`, ...
    pub type_name: String,
    /// The name.
    pub name: String,
    /// With `--range`: the mark.
    pub mark: Option<Mark>,
    /// With `--range`: `@<FUNC+[START-END,...]>` (empty for a global).
    pub range: String,
}

impl AvailableVar {
    /// The line as perf prints it (without the indentation).
    pub fn text(&self) -> String {
        let mark = match self.mark {
            None => return format!("{}\t{}", self.type_name, self.name),
            Some(Mark::Ext) => "[EXT]",
            Some(Mark::Inv) => "[INV]",
            Some(Mark::Val) => "[VAL]",
        };
        if self.mark == Some(Mark::Ext) {
            return format!("{mark}\t{}\t{}", self.type_name, self.name);
        }
        format!("{mark}\t{}\t{}\t{}", self.type_name, self.name, self.range)
    }

    /// What `--filter` is matched against: perf's text after the line's first tab (the name alone without
    /// `--range`; `TYPE\tNAME\tRANGE` with it).
    pub fn filter_text(&self) -> String {
        let t = self.text();
        match self.mark {
            None => self.name.clone(),
            Some(_) => t.split_once('\t').map(|(_, r)| r.to_string()).unwrap_or(t),
        }
    }
}

/// `-V`: per probe address, the variables that can be fetched there (sorted as perf prints them). With
/// `range`, also those that have a location only elsewhere in the function (`[INV]`), as perf's --range.
pub fn available_vars(
    di: &DebugInfo,
    spec: &Spec,
    externs: bool,
    range: bool,
) -> Result<Vec<(String, Vec<AvailableVar>)>, Error> {
    let (sites, _) = sites(di, spec, true)?;
    let mut out = Vec::new();
    for site in sites {
        let fname = di.name(site.unit, site.function).unwrap_or_default();
        let entry = di
            .entry_pc(site.unit, site.function)
            .unwrap_or(site.address);
        let mut vars = Vec::new();
        let type_name = |var: VarDie| {
            perf_type_name(di, var.unit, var.die).unwrap_or_else(|| "(unknown_type)".into())
        };
        for var in visible_vars(di, site, false) {
            // perf prints an unnamed parameter (C++'s `char **`) with glibc's "(null)" for its name.
            let name = di
                .name(var.unit, var.die)
                .unwrap_or_else(|| "(null)".into());
            let Some(state) = perf_state(di, var, site.function, site.address, range) else {
                continue;
            };
            let fetchable = state == Mark::Val
                && location::translate_location(
                    di,
                    var,
                    Some((site.unit, site.function)),
                    site.address,
                    Space::User,
                )
                .is_ok();
            if !fetchable && !range {
                continue;
            }
            let mut v = AvailableVar {
                type_name: type_name(var),
                name,
                mark: None,
                range: String::new(),
            };
            if range {
                let Some(r) = var_range(di, var, site.function) else {
                    continue;
                };
                v.mark = Some(if fetchable { Mark::Val } else { Mark::Inv });
                v.range = r;
            }
            vars.push(v);
        }
        if externs {
            for c in di.children(site.unit, 0) {
                if di.dies(site.unit)[c].tag != gimli::DW_TAG_variable {
                    continue;
                }
                let var = VarDie {
                    unit: site.unit,
                    die: c,
                };
                let Some(name) = di.name(var.unit, var.die) else {
                    continue;
                };
                let listed = perf_state(di, var, site.function, site.address, false)
                    == Some(Mark::Val)
                    && location::translate_location(di, var, None, site.address, Space::User)
                        .is_ok();
                if listed {
                    vars.push(AvailableVar {
                        type_name: type_name(var),
                        name,
                        mark: range.then_some(Mark::Ext),
                        range: String::new(),
                    });
                }
            }
        }
        // perf keeps the printed lines in a sorted list of strings.
        vars.sort_by_key(|v| v.text());
        vars.dedup_by_key(|v| v.text());
        out.push((format!("{fname}+{}", site.address - entry), vars));
    }
    Ok(out)
}

/// The type of `die` as perf's `die_get_typename` spells it: const/volatile/restrict skipped (a typedef kept by
/// its name), `*` after the element of an array as after a pointee, `(function_type)` for a function, `void*`
/// for a pointer to nothing or to an unnamed type; `None` (perf's "(unknown_type)") for an unnamed type
/// itself, such as an anonymous struct or a C++ reference.
fn perf_type_name(di: &DebugInfo, unit: usize, die: usize) -> Option<String> {
    let mut t = location::type_of(di, unit, die)?;
    while matches!(
        di.dies(unit)[t].tag,
        gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_shared_type
    ) {
        t = location::type_of(di, unit, t)?;
    }
    let tag = di.dies(unit)[t].tag;
    match tag {
        gimli::DW_TAG_array_type | gimli::DW_TAG_pointer_type => {
            match perf_type_name(di, unit, t) {
                Some(inner) => Some(format!("{inner}*")),
                None if tag == gimli::DW_TAG_pointer_type => Some("void*".into()),
                None => None,
            }
        }
        gimli::DW_TAG_subroutine_type => Some("(function_type)".into()),
        _ => {
            let name = di.name(unit, t)?;
            Some(match tag {
                gimli::DW_TAG_union_type => format!("union {name}"),
                gimli::DW_TAG_structure_type => format!("struct {name}"),
                gimli::DW_TAG_enumeration_type => format!("enum {name}"),
                _ => name,
            })
        }
    }
}

/// perf's `die_get_var_range`: `@<FUNC+[START-END,...]>`, the variable's location-list ranges relative to the
/// out-of-line function's entry (perf's sp_die, also for a variable of an inlined copy), or for a single location the ranges of the scope the variable is declared in. `None` where
/// perf drops the variable (no location: a constant).
fn var_range(di: &DebugInfo, var: VarDie, scope: usize) -> Option<String> {
    let entry = di.entry_pc(var.unit, scope)?;
    let name = di.name(var.unit, scope)?;
    di.entry(var.unit, var.die)
        .attr_value(gimli::DW_AT_location)?;
    let spans: Vec<(u64, u64)> = match location::location_list(di, var) {
        Some(list) => list.iter().map(|(b, e, _)| (*b, *e)).collect(),
        None => {
            let parent = di.dies(var.unit)[var.die].parent?;
            di.ranges(var.unit, parent)
        }
    };
    if spans.is_empty() {
        return Some(String::new());
    }
    let parts: Vec<String> = spans
        .iter()
        .map(|(b, e)| format!("{}-{}", b.wrapping_sub(entry), e.wrapping_sub(entry)))
        .collect();
    Some(format!("@<{name}+[{}]>", parts.join(",")))
}

/// A probe point as perf prints it back (synthesize_perf_probe_point): `FUNC[+OFFS|:LINE|%return][@FILE]` or
/// `@FILE:LINE`, a file longer than 30 bytes cut to its last 30 at a `/`; a lazy pattern is not printed.
pub fn point_text(spec: &Spec) -> String {
    let pp = &spec.point;
    let mut s = String::new();
    if let Some(f) = &pp.function {
        s.push_str(f);
        match (pp.offset, pp.line) {
            (Some(o), _) if o > 0 => s.push_str(&format!("+{o}")),
            (_, Some(l)) if l > 0 => s.push_str(&format!(":{l}")),
            _ if pp.retprobe => s.push_str("%return"),
            _ => {}
        }
    }
    if let Some(file) = &pp.file {
        let mut tail = file.as_str();
        if file.len() > 30 {
            let cut = file.len() - 30;
            tail = match file
                .get(cut..)
                .and_then(|t| t.find('/').map(|p| &t[p + 1..]))
            {
                Some(t) => t,
                None => file.get(cut..).unwrap_or(file),
            };
        }
        s.push('@');
        s.push_str(tail);
        if pp.function.is_none() {
            if let Some(l) = pp.line.filter(|&l| l > 0) {
                s.push_str(&format!(":{l}"));
            }
        }
    }
    s
}

/// perf's rule for listing a variable under `-V` (convert_variable_location without a target): a constant, or
/// a location at the address whose first operation names a register, a register plus offset, a global's
/// address, or the frame base of a scope that has one (`Val`). A parameter at the scope's entry without a
/// location there takes its first location up to the scope's end, as perf's search past an mcount call does
/// (`Val`, though bport then finds it not fetchable at the entry); with `range`, a local variable located only
/// later in the scope is `Inv`. `None`: perf does not list it.
fn perf_state(di: &DebugInfo, var: VarDie, scope: usize, addr: u64, range: bool) -> Option<Mark> {
    use gimli::Operation;
    let e = di.entry(var.unit, var.die);
    if e.attr_value(gimli::DW_AT_const_value).is_some() {
        return Some(Mark::Val);
    }
    let supported = |expr: &gimli::Expression<super::dwarf::R>| match expr
        .clone()
        .operations(di.unit(var.unit).encoding())
        .next()
    {
        Ok(Some(Operation::Register { .. } | Operation::RegisterOffset { .. })) => true,
        Ok(Some(Operation::Address { .. })) => true,
        Ok(Some(Operation::FrameOffset { .. })) => di
            .entry(var.unit, scope)
            .attr_value(gimli::DW_AT_frame_base)
            .is_some(),
        _ => false,
    };
    if let Ok(Some(expr)) = location::location_at(di, var, addr) {
        return supported(&expr).then_some(Mark::Val);
    }
    let tag = di.dies(var.unit)[var.die].tag;
    let mark = if range && tag == gimli::DW_TAG_variable {
        Mark::Inv
    } else if tag == gimli::DW_TAG_formal_parameter && di.entry_pc(var.unit, scope) == Some(addr) {
        Mark::Val
    } else {
        return None;
    };
    // dwarf_highpc: only a scope with DW_AT_high_pc has one.
    di.entry(var.unit, scope).attr_value(gimli::DW_AT_high_pc)?;
    let high = di.ranges(var.unit, scope).iter().map(|r| r.1).max()?;
    let list = location::location_list(di, var)?;
    // The first address past `addr` (up to and with the high pc) that a location covers.
    let (_, _, expr) = list
        .iter()
        .filter(|(b, e, _)| *e > addr + 1 && *b <= high && b < e)
        .min_by_key(|(b, _, _)| (*b).max(addr + 1))?;
    supported(expr).then_some(mark)
}

/// `-L`: the source lines of a function, and which of them can be probed (perf's line_range).
#[derive(Clone, Debug)]
pub struct LineRange {
    /// The function.
    pub function: String,
    /// Its source file.
    pub path: String,
    /// Its declaration line (relative line 0).
    pub offset: u64,
    /// First and last absolute line shown.
    pub start: u64,
    /// Last line holding code (numbering stops there; two more lines are shown).
    pub end: u64,
    /// Absolute lines that can be probed.
    pub lines: Vec<u64>,
}

/// `-L FUNC[:START[-END]]`.
pub fn line_range(
    di: &DebugInfo,
    function: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> Result<LineRange, Error> {
    let inst = di
        .first_body(function)
        .ok_or_else(|| Error::FunctionNotFound {
            function: function.into(),
            path: di.path.clone(),
        })?;
    let (u, f) = (inst.unit, inst.die);
    let decl = di.decl_line(u, f).unwrap_or(0);
    let decl_file = di
        .file_attr(u, f, gimli::DW_AT_decl_file)
        .unwrap_or_default();
    let lno_s = decl + start.unwrap_or(0);
    let lno_e = end.map_or(u64::MAX, |e| decl + e);
    let mut lines: Vec<u64> = Vec::new();
    let add = |file: &str, line: u64, addr: u64, lines: &mut Vec<u64>| {
        if file != decl_file || line < lno_s || line > lno_e {
            return;
        }
        if let Some((f2, l2)) = di.line_at(u, addr) {
            if l2 != line || f2 != file {
                return;
            }
        }
        if !lines.contains(&line) {
            lines.push(line);
        }
    };
    // Rows inside the function, not inside an inlined copy unless at its call line (perf's die_walk_lines).
    for row in di.rows(u) {
        if !row.is_stmt || row.end_sequence || !di.contains(u, f, row.address) {
            continue;
        }
        let chain = di.scopes_at(u, f, row.address);
        if let Some(&inl) = chain
            .iter()
            .rev()
            .find(|&&s| di.dies(u)[s].tag == gimli::DW_TAG_inlined_subroutine)
        {
            let call_line = di
                .entry(u, inl)
                .attr_value(gimli::DW_AT_call_line)
                .and_then(|v| DebugInfo::udata(&v));
            let call_file = di.file_attr(u, inl, gimli::DW_AT_call_file);
            let at_call = call_file.as_deref() == Some(&decl_file) && call_line == Some(row.line);
            if !at_call {
                continue;
            }
        }
        add(&row.file, row.line, row.address, &mut lines);
    }
    // The declaration line at the entry, and the call lines of inlined copies.
    if let Some(entry) = di.entry_pc(u, f) {
        add(&decl_file, decl, entry, &mut lines);
    }
    let mut stack: Vec<usize> = di.children(u, f).collect();
    while let Some(c) = stack.pop() {
        let tag = di.dies(u)[c].tag;
        if tag == gimli::DW_TAG_inlined_subroutine {
            let call_line = di
                .entry(u, c)
                .attr_value(gimli::DW_AT_call_line)
                .and_then(|v| DebugInfo::udata(&v));
            if let (Some(file), Some(line), Some(entry)) = (
                di.file_attr(u, c, gimli::DW_AT_call_file),
                call_line,
                di.entry_pc(u, c),
            ) {
                add(&file, line, entry, &mut lines);
            }
        } else if tag == gimli::DW_TAG_lexical_block {
            stack.extend(di.children(u, c));
        }
    }
    lines.sort_unstable();
    Ok(LineRange {
        function: function.into(),
        path: decl_file,
        offset: decl,
        start: lno_s,
        end: lno_e,
        lines,
    })
}

/// Renders a line range as perf's `-L` does (util/probe-event.c, `__show_line_range`): numbered probe-able lines
/// relative to the function, others indented, and two lines after the last numbered one when no end is given.
pub fn write_line_range(
    lr: &LineRange,
    source: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let src: Vec<&str> = source.split_inclusive('\n').collect();
    writeln!(
        out,
        "<{}@{}:{}>",
        lr.function,
        lr.path,
        lr.start - lr.offset
    )?;
    let mut l = lr.start;
    let show = |out: &mut dyn std::io::Write, l: u64, num: bool| -> std::io::Result<bool> {
        let Some(text) = src.get(l as usize - 1) else {
            return Ok(false);
        };
        if num {
            write!(out, "{:>7}  {text}", l - lr.offset)?;
        } else {
            write!(out, "         {text}")?;
        }
        if !text.ends_with('\n') {
            writeln!(out)?;
        }
        Ok(true)
    };
    for &n in &lr.lines {
        while n > l {
            if !show(out, l, false)? {
                return Ok(());
            }
            l += 1;
        }
        show(out, l, true)?;
        l += 1;
    }
    let end = if lr.end == u64::MAX { l + 2 } else { lr.end };
    while l <= end {
        if !show(out, l, false)? {
            break;
        }
        l += 1;
    }
    Ok(())
}

/// `-F`: the binary's function and object symbols as perf names them (demangled), without those starting with
/// `_` (perf's default filter, applied to the demangled name).
pub fn functions(di: &DebugInfo, filter: &super::filter::Filter, demangle: bool) -> Vec<String> {
    let mut out: Vec<String> = di
        .symbols()
        .iter()
        .map(|s| {
            if demangle {
                crate::perf::symbols::demangle::demangle(s)
            } else {
                s.clone()
            }
        })
        .filter(|s| filter.matches(s))
        .collect();
    // Equal names are indistinguishable in the output, so an unstable sort prints what perf's sorted list does.
    out.sort_unstable();
    out
}

/// `-l`: how a defined probe reads as a perf point (`work:4@/src/prog.c`), from the binary's DWARF when it can
/// be read, else the raw place.
pub fn describe(line: &tracefs::ProbeLine) -> String {
    let (path, offset) = match line.place.rsplit_once(':') {
        Some((p, o)) => (p, u64::from_str_radix(o.trim_start_matches("0x"), 16).ok()),
        None => (line.place.as_str(), None),
    };
    let point = offset.and_then(|off| {
        let di = DebugInfo::open(Path::new(path)).ok()?;
        let seg = di
            .segments
            .iter()
            .find(|s| s.exec && off >= s.offset && off < s.offset + s.memsz)?;
        let svma = off - seg.offset + seg.vaddr;
        let unit = di.unit_at(svma)?;
        point_of(&di, unit, svma)
    });
    let point = match point {
        Some(p) if line.retprobe => match p.split_once('@') {
            Some((f, file)) => format!("{f}%return@{file}"),
            None => format!("{p}%return"),
        },
        Some(p) => p,
        None => line.place.clone(),
    };
    let names: Vec<&str> = line
        .args
        .iter()
        .map(|a| a.split('=').next().unwrap_or(a))
        .collect();
    let mut s = format!("on {point}");
    if line.place.contains('/') {
        s.push_str(&format!(" in {path}"));
    }
    if !names.is_empty() {
        s.push_str(&format!(" with {}", names.join(" ")));
    }
    s
}
