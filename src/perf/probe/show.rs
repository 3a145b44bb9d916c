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

/// A line of `-V`: a variable and its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AvailableVar {
    /// `int`, `char*`, ...
    pub type_name: String,
    /// The name.
    pub name: String,
}

/// `-V`: per probe address, the variables that can be fetched there (sorted by name, as perf prints them).
pub fn available_vars(
    di: &DebugInfo,
    spec: &Spec,
    externs: bool,
) -> Result<Vec<(String, Vec<AvailableVar>)>, Error> {
    let (sites, _) = sites(di, spec, true)?;
    let mut out = Vec::new();
    for site in sites {
        let fname = di.name(site.unit, site.function).unwrap_or_default();
        let entry = di
            .entry_pc(site.unit, site.function)
            .unwrap_or(site.address);
        let mut vars = Vec::new();
        let mut candidates = visible_vars(di, site, false);
        if externs {
            candidates.extend(
                di.children(site.unit, 0)
                    .filter(|&c| di.dies(site.unit)[c].tag == gimli::DW_TAG_variable)
                    .map(|c| VarDie {
                        unit: site.unit,
                        die: c,
                    }),
            );
        }
        for var in candidates {
            let Some(name) = di.name(var.unit, var.die) else {
                continue;
            };
            let fetchable = perf_lists(di, var, site.scope, site.address)
                && location::translate_location(
                    di,
                    var,
                    Some((site.unit, site.function)),
                    site.address,
                    Space::User,
                )
                .is_ok();
            if fetchable {
                vars.push(AvailableVar {
                    type_name: location::type_name(
                        di,
                        var.unit,
                        location::type_of(di, var.unit, var.die),
                    ),
                    name,
                });
            }
        }
        // perf keeps the printed `TYPE\tNAME` strings in a sorted list.
        vars.sort_by(|a, b| (&a.type_name, '\t', &a.name).cmp(&(&b.type_name, '\t', &b.name)));
        vars.dedup();
        out.push((format!("{fname}+{}", site.address - entry), vars));
    }
    Ok(out)
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
/// address, or the frame base of a scope that has one. bport lists only those it can also fetch, so a computed
/// value (a register then arithmetic, which perf lists and reads as memory) is left out.
fn perf_lists(di: &DebugInfo, var: VarDie, scope: usize, addr: u64) -> bool {
    use gimli::Operation;
    let e = di.entry(var.unit, var.die);
    if e.attr_value(gimli::DW_AT_const_value).is_some() {
        return true;
    }
    let Ok(Some(expr)) = location::location_at(di, var, addr) else {
        return false;
    };
    let first = expr.operations(di.unit(var.unit).encoding()).next();
    match first {
        Ok(Some(Operation::Register { .. } | Operation::RegisterOffset { .. })) => true,
        Ok(Some(Operation::Address { .. })) => true,
        Ok(Some(Operation::FrameOffset { .. })) => di
            .entry(var.unit, scope)
            .attr_value(gimli::DW_AT_frame_base)
            .is_some(),
        _ => false,
    }
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
pub fn functions(di: &DebugInfo) -> Vec<String> {
    let mut out: Vec<String> = di
        .symbols()
        .iter()
        .map(|s| crate::perf::symbols::demangle::demangle(s))
        .filter(|s| !s.starts_with('_'))
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
