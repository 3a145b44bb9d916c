//! The DWARF of one binary, asked the questions `perf probe` asks (tools/perf/util/probe-finder.c and
//! dwarf-aux.c): where a function and its inlined instances are, which line-table rows belong to a line, which
//! variables are in scope at an address, and how to fetch them there (see `location`).
//!
//! Each unit's DIEs are indexed once (tag, offset, parent); attributes are read on demand.

use super::Error;
use gimli::Reader as _;
use gimli::{AttributeValue, EndianRcSlice, RunTimeEndian, UnitOffset};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub(crate) type R = EndianRcSlice<RunTimeEndian>;

/// One DIE of the index.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Die {
    pub offset: UnitOffset,
    pub tag: gimli::DwTag,
    pub parent: Option<usize>,
}

/// A unit with its DIE index and line rows.
pub(crate) struct UnitInfo {
    pub unit: gimli::Unit<R>,
    pub dies: Vec<Die>,
    /// Line rows sorted by address as libdw sorts them (stable; an end of sequence before a row at its address).
    pub rows: Vec<Row>,
    /// The unit's compilation directory, joined to relative file names.
    pub comp_dir: Option<String>,
    /// Whether a variable has a location list (computed on first use).
    pub optimized: std::cell::OnceCell<bool>,
}

/// One line-table row.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub address: u64,
    pub line: u64,
    /// Shared by every row of the file: a large binary has millions of rows over a few hundred files.
    pub file: Rc<str>,
    pub is_stmt: bool,
    pub end_sequence: bool,
    pub prologue_end: bool,
}

/// A loadable segment: how svmas map to file offsets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub offset: u64,
    pub exec: bool,
}

/// Where a function's code is: the out-of-line body or one inlined copy.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Instance {
    pub unit: usize,
    pub die: usize,
    pub inlined: bool,
}

/// The binary's DWARF and what the translation needs besides it.
pub struct DebugInfo {
    pub(crate) path: PathBuf,
    pub(crate) dwarf: gimli::Dwarf<R>,
    pub(crate) units: Vec<UnitInfo>,
    pub(crate) eh_frame: Option<(gimli::EhFrame<R>, gimli::BaseAddresses)>,
    pub(crate) debug_frame: Option<gimli::DebugFrame<R>>,
    pub(crate) segments: Vec<Segment>,
    /// Function and object symbols (for `-F` and for a binary without DWARF).
    pub(crate) symbols: Vec<String>,
}

fn section_reader(file: &object::File, name: &str, endian: RunTimeEndian) -> Option<R> {
    let s = file.section_by_name(name)?;
    let data = s.uncompressed_data().ok()?;
    Some(EndianRcSlice::new(Rc::from(&*data), endian))
}

fn load_dwarf(file: &object::File, endian: RunTimeEndian) -> Result<gimli::Dwarf<R>, gimli::Error> {
    gimli::Dwarf::load(|id: gimli::SectionId| -> Result<R, gimli::Error> {
        Ok(section_reader(file, id.name(), endian)
            .unwrap_or_else(|| EndianRcSlice::new(Rc::from(&[][..]), endian)))
    })
}

fn has_dwarf(file: &object::File) -> bool {
    file.section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0)
}

/// The separate debug file the distribution's -dbgsym/-debuginfo package installs, found by build-id.
fn debug_file_by_build_id(file: &object::File) -> Option<PathBuf> {
    let id = file.build_id().ok().flatten()?;
    if id.len() < 2 {
        return None;
    }
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let p = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    p.exists().then_some(p)
}

impl DebugInfo {
    /// Reads `path` and its DWARF (or its build-id debug file's).
    pub fn open(path: &Path) -> Result<DebugInfo, Error> {
        let data = std::fs::read(path).map_err(|source| Error::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let file = object::File::parse(&*data).map_err(|e| Error::NotElf {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        if file.architecture() != object::Architecture::X86_64 {
            return Err(Error::Architecture {
                path: path.to_path_buf(),
                arch: format!("{:?}", file.architecture()),
            });
        }
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let mut symbols: Vec<String> = file
            .symbols()
            .filter(|s| {
                // perf keeps functions, objects and labels (NOTYPE symbols in a section, e.g. data_start).
                matches!(
                    s.kind(),
                    object::SymbolKind::Text
                        | object::SymbolKind::Data
                        | object::SymbolKind::Unknown
                ) && matches!(s.section(), object::SymbolSection::Section(_))
            })
            .filter_map(|s| s.name().ok().map(String::from))
            .collect();
        symbols.sort();
        symbols.dedup();
        let segments = file
            .segments()
            .map(|s| {
                let (offset, _) = s.file_range();
                Segment {
                    vaddr: s.address(),
                    memsz: s.size(),
                    offset,
                    exec: matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if p_flags.0 & 1 != 0),
                }
            })
            .collect();
        let eh_frame = section_reader(&file, ".eh_frame", endian).map(|r| {
            let sec = file.section_by_name(".eh_frame").expect("just read");
            let mut bases = gimli::BaseAddresses::default().set_eh_frame(sec.address());
            if let Some(text) = file.section_by_name(".text") {
                bases = bases.set_text(text.address());
            }
            (gimli::EhFrame::from(r), bases)
        });
        let debug_frame =
            section_reader(&file, ".debug_frame", endian).map(gimli::DebugFrame::from);

        let dwarf = if has_dwarf(&file) {
            load_dwarf(&file, endian)
        } else if let Some(debug_path) = debug_file_by_build_id(&file) {
            let debug_data = std::fs::read(&debug_path).map_err(|source| Error::Read {
                path: debug_path.clone(),
                source,
            })?;
            let debug_file = object::File::parse(&*debug_data).map_err(|e| Error::NotElf {
                path: debug_path.clone(),
                reason: e.to_string(),
            })?;
            load_dwarf(&debug_file, endian)
        } else {
            return Err(Error::NoDebugInfo {
                path: path.to_path_buf(),
                stripped: file.symbol_table().is_none(),
                build_id: file
                    .build_id()
                    .ok()
                    .flatten()
                    .map(|id| id.iter().map(|b| format!("{b:02x}")).collect()),
            });
        }
        .map_err(|e| Error::Dwarf {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;

        let mut units = Vec::new();
        let mut headers = dwarf.units();
        let dwarf_err = |e: gimli::Error| Error::Dwarf {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        while let Some(header) = headers.next().map_err(dwarf_err)? {
            let unit = dwarf.unit(header).map_err(dwarf_err)?;
            units.push(index_unit(&dwarf, unit).map_err(dwarf_err)?);
        }
        Ok(DebugInfo {
            path: path.to_path_buf(),
            dwarf,
            units,
            eh_frame,
            debug_frame,
            segments,
            symbols,
        })
    }

    /// The file offset of an svma in an executable segment (what a uprobe's `PATH:OFFSET` names).
    pub(crate) fn file_offset(&self, svma: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| s.exec && svma >= s.vaddr && svma < s.vaddr + s.memsz)
            .map(|s| svma - s.vaddr + s.offset)
    }

    /// The uprobe `@+OFFSET` of a global's svma: the kernel adds the probed mapping's (address - file offset), so
    /// the offset is the svma shifted by the probed (executable) segment's vaddr - offset.
    pub(crate) fn global_file_offset(&self, svma: u64) -> Option<u64> {
        let text = self.segments.iter().find(|s| s.exec)?;
        // A crafted ELF may put the segment's file offset above its vaddr: no offset then, not an overflow.
        svma.checked_sub(text.vaddr.checked_sub(text.offset)?)
    }

    pub(crate) fn entry(&self, unit: usize, die: usize) -> gimli::DebuggingInformationEntry<R> {
        let u = &self.units[unit];
        u.unit
            .entry(u.dies[die].offset)
            .expect("an indexed DIE reads back")
    }

    fn die_index(&self, unit: usize, offset: UnitOffset) -> Option<usize> {
        self.units[unit]
            .dies
            .binary_search_by_key(&offset.0, |d| d.offset.0)
            .ok()
    }

    /// A DIE's name, following DW_AT_abstract_origin and DW_AT_specification as perf's `dwarf_diename` does for
    /// inlined and out-of-line copies.
    pub(crate) fn name(&self, unit: usize, die: usize) -> Option<String> {
        self.origin_attr(unit, die, gimli::DW_AT_name)
            .and_then(|(u, v)| self.string(u, v))
    }

    /// An attribute of a DIE or of its abstract origin / specification.
    pub(crate) fn origin_attr(
        &self,
        unit: usize,
        die: usize,
        at: gimli::DwAt,
    ) -> Option<(usize, AttributeValue<R>)> {
        let mut die = die;
        for _ in 0..8 {
            let e = self.entry(unit, die);
            if let Some(v) = e.attr_value(at) {
                return Some((unit, v));
            }
            let next = e
                .attr_value(gimli::DW_AT_abstract_origin)
                .or_else(|| e.attr_value(gimli::DW_AT_specification));
            match next {
                Some(AttributeValue::UnitRef(off)) => die = self.die_index(unit, off)?,
                _ => return None,
            }
        }
        None
    }

    pub(crate) fn string(&self, unit: usize, v: AttributeValue<R>) -> Option<String> {
        let r = self.dwarf.attr_string(&self.units[unit].unit, v).ok()?;
        Some(r.to_string_lossy().ok()?.into_owned())
    }

    pub(crate) fn udata(v: &AttributeValue<R>) -> Option<u64> {
        match *v {
            AttributeValue::Udata(n) => Some(n),
            AttributeValue::Data1(n) => Some(n.into()),
            AttributeValue::Data2(n) => Some(n.into()),
            AttributeValue::Data4(n) => Some(n.into()),
            AttributeValue::Data8(n) => Some(n),
            AttributeValue::Sdata(n) => u64::try_from(n).ok(),
            _ => None,
        }
    }

    pub(crate) fn decl_line(&self, unit: usize, die: usize) -> Option<u64> {
        self.origin_attr(unit, die, gimli::DW_AT_decl_line)
            .and_then(|(_, v)| Self::udata(&v))
    }

    /// The file of a DW_AT_decl_file / DW_AT_call_file attribute, as a full path (comp_dir joined).
    pub(crate) fn file_attr(&self, unit: usize, die: usize, at: gimli::DwAt) -> Option<String> {
        let (u, v) = if at == gimli::DW_AT_call_file {
            (unit, self.entry(unit, die).attr_value(at)?)
        } else {
            self.origin_attr(unit, die, at)?
        };
        let index = match v {
            AttributeValue::FileIndex(n) => n,
            other => Self::udata(&other)?,
        };
        self.file_name(u, index)
    }

    fn file_name(&self, unit: usize, index: u64) -> Option<String> {
        let ui = &self.units[unit];
        let program = ui.unit.line_program.as_ref()?;
        let header = program.header();
        let fe = header.file(index)?;
        file_path(&self.dwarf, &ui.unit, header, fe, ui.comp_dir.as_deref())
    }

    /// The address ranges of a DIE (low/high pc or DW_AT_ranges).
    pub(crate) fn ranges(&self, unit: usize, die: usize) -> Vec<(u64, u64)> {
        let e = self.entry(unit, die);
        let mut out = Vec::new();
        if let Ok(mut it) = self.dwarf.die_ranges(&self.units[unit].unit, &e) {
            while let Ok(Some(r)) = it.next() {
                if r.end > r.begin {
                    out.push((r.begin, r.end));
                }
            }
        }
        out
    }

    /// The entry address: DW_AT_entry_pc, else low_pc, else the lowest range start (libdw's `dwarf_entrypc`).
    pub(crate) fn entry_pc(&self, unit: usize, die: usize) -> Option<u64> {
        let e = self.entry(unit, die);
        let u = &self.units[unit].unit;
        for at in [gimli::DW_AT_entry_pc, gimli::DW_AT_low_pc] {
            if let Some(v) = e.attr_value(at) {
                if let Ok(Some(a)) = self.dwarf.attr_address(u, v.clone()) {
                    return Some(a);
                }
            }
        }
        self.ranges(unit, die).iter().map(|r| r.0).min()
    }

    pub(crate) fn contains(&self, unit: usize, die: usize, addr: u64) -> bool {
        self.ranges(unit, die)
            .iter()
            .any(|&(b, e)| addr >= b && addr < e)
    }

    /// Children of a DIE (indices into the unit's index).
    pub(crate) fn children(&self, unit: usize, die: usize) -> impl Iterator<Item = usize> + '_ {
        let dies = &self.units[unit].dies;
        ((die + 1)..dies.len())
            .take_while(move |&i| self.is_descendant(unit, i, die))
            .filter(move |&i| dies[i].parent == Some(die))
    }

    fn is_descendant(&self, unit: usize, mut i: usize, ancestor: usize) -> bool {
        let dies = &self.units[unit].dies;
        while let Some(p) = dies[i].parent {
            if p == ancestor {
                return true;
            }
            i = p;
        }
        false
    }

    /// Every out-of-line body and inlined copy of the function named `name` (a name ending in `.isra.0` or such
    /// also matches its base name, as perf's `die_match_name` does for the symbol).
    pub(crate) fn instances(&self, name: &str, file: Option<&str>) -> Vec<Instance> {
        let mut out = Vec::new();
        for (ui, u) in self.units.iter().enumerate() {
            for (di, d) in u.dies.iter().enumerate() {
                let inlined = d.tag == gimli::DW_TAG_inlined_subroutine;
                if d.tag != gimli::DW_TAG_subprogram && !inlined {
                    continue;
                }
                if self.name(ui, di).as_deref() != Some(name) {
                    continue;
                }
                // gcc gives an inlined copy that became no instructions an empty range but an entry_pc, and
                // perf probes it there.
                let has_code = if inlined {
                    self.entry_pc(ui, di).is_some()
                } else {
                    !self.ranges(ui, di).is_empty()
                };
                if !has_code {
                    continue;
                }
                if let Some(f) = file {
                    match self.file_attr(ui, di, gimli::DW_AT_decl_file) {
                        Some(decl) if tail_matches(&decl, f) => {}
                        _ => continue,
                    }
                }
                out.push(Instance {
                    unit: ui,
                    die: di,
                    inlined,
                });
            }
        }
        out
    }

    /// The out-of-line function (DW_TAG_subprogram with code) of a unit containing `addr`.
    pub(crate) fn real_function_at(&self, unit: usize, addr: u64) -> Option<usize> {
        let u = &self.units[unit];
        (0..u.dies.len())
            .find(|&di| u.dies[di].tag == gimli::DW_TAG_subprogram && self.contains(unit, di, addr))
    }

    /// The unit whose code holds `addr`.
    pub(crate) fn unit_at(&self, addr: u64) -> Option<usize> {
        (0..self.units.len()).find(|&ui| self.real_function_at(ui, addr).is_some())
    }

    /// Scopes containing `addr`, from `function` inwards (lexical blocks and inlined copies; a block without
    /// ranges is taken as covering its parent).
    pub(crate) fn scopes_at(&self, unit: usize, function: usize, addr: u64) -> Vec<usize> {
        let mut chain = vec![function];
        let mut cur = function;
        'down: loop {
            for c in self.children(unit, cur).collect::<Vec<_>>() {
                let tag = self.units[unit].dies[c].tag;
                if tag != gimli::DW_TAG_lexical_block && tag != gimli::DW_TAG_inlined_subroutine {
                    continue;
                }
                let ranges = self.ranges(unit, c);
                // An inlined copy that became no instructions has an empty range and only its entry_pc.
                let inside = ranges.iter().any(|&(b, e)| addr >= b && addr < e)
                    || (ranges.is_empty() && tag == gimli::DW_TAG_lexical_block)
                    || (ranges.is_empty() && self.entry_pc(unit, c) == Some(addr));
                if inside {
                    chain.push(c);
                    cur = c;
                    continue 'down;
                }
            }
            break;
        }
        chain
    }

    /// The line of `addr` as perf's `cu_find_lineinfo` finds it: a function's entry is its declaration line;
    /// else the first statement row among the rows at the lowest index with that exact address (so a line that
    /// shares its address with an earlier line does not map back to itself).
    pub(crate) fn line_at(&self, unit: usize, addr: u64) -> Option<(String, u64)> {
        if let Some(f) = self.real_function_at(unit, addr) {
            if self.entry_pc(unit, f) == Some(addr) {
                return Some((
                    self.file_attr(unit, f, gimli::DW_AT_decl_file)?,
                    self.decl_line(unit, f)?,
                ));
            }
        }
        let rows = &self.units[unit].rows;
        let first = rows.partition_point(|r| r.address < addr);
        if first < rows.len() && rows[first].address == addr {
            let row = rows[first..]
                .iter()
                .take_while(|r| r.address == addr)
                .find(|r| r.is_stmt && !r.end_sequence)?;
            return Some((row.file.to_string(), row.line));
        }
        // Not at a row's start: the row before it covers it.
        let row = rows[..first].last()?;
        (!row.end_sequence).then(|| (row.file.to_string(), row.line))
    }

    /// Function entry after the prologue, as perf's `die_skip_prologue` finds it: the row after the first row at
    /// the entry (the entry row itself when it carries `prologue_end`), or the entry when that row is past the
    /// function's end.
    pub(crate) fn skip_prologue(&self, unit: usize, function: usize, entry: u64) -> u64 {
        let ranges = self.ranges(unit, function);
        let [(_, high)] = ranges.as_slice() else {
            // perf's dwarf_highpc fails for a function made of several ranges: no skipping.
            return entry;
        };
        let rows = &self.units[unit].rows;
        let Some(start) = rows.iter().position(|r| r.address == entry) else {
            return entry;
        };
        let entry_line = rows[start].line;
        let mut i = start;
        while i < rows.len() {
            let r = &rows[i];
            if r.address >= *high || r.prologue_end || r.line != entry_line || i != start {
                break;
            }
            i += 1;
        }
        let i = i.min(rows.len() - 1);
        if rows[i].address < *high {
            rows[i].address
        } else {
            rows[i.saturating_sub(1).max(start)].address
        }
    }

    /// Whether the unit was compiled with optimization, as perf's `die_is_optimized_target` decides: some
    /// variable or parameter has a location list (which also holds for clang and rustc, whose DW_AT_producer
    /// names no -O flag).
    pub(crate) fn optimized(&self, unit: usize) -> bool {
        let u = &self.units[unit];
        *u.optimized.get_or_init(|| {
            u.dies.iter().any(|d| {
                (d.tag == gimli::DW_TAG_variable || d.tag == gimli::DW_TAG_formal_parameter)
                    && u.unit.entry(d.offset).is_ok_and(|e| {
                        matches!(
                            e.attr_value_raw(gimli::DW_AT_location),
                            Some(
                                AttributeValue::SecOffset(_)
                                    | AttributeValue::LocationListsRef(_)
                                    | AttributeValue::DebugLocListsIndex(_)
                            )
                        )
                    })
            })
        })
    }
}

/// `tail` names `path` when it equals it or is a trailing sequence of its path components (perf's `strtailcmp`
/// compares byte tails; whole components avoid `og.c` matching `prog.c`).
pub(crate) fn tail_matches(path: &str, tail: &str) -> bool {
    path == tail || path.ends_with(&format!("/{}", tail.trim_start_matches("./")))
}

fn file_path(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    header: &gimli::LineProgramHeader<R>,
    fe: &gimli::FileEntry<R>,
    comp_dir: Option<&str>,
) -> Option<String> {
    let name = dwarf.attr_string(unit, fe.path_name()).ok()?;
    let name = name.to_string_lossy().ok()?.into_owned();
    if name.starts_with('/') {
        return Some(name);
    }
    let dir = fe
        .directory(header)
        .and_then(|d| dwarf.attr_string(unit, d).ok())
        .and_then(|d| d.to_string_lossy().ok().map(|s| s.into_owned()));
    let mut path = PathBuf::new();
    if let Some(cd) = comp_dir {
        path.push(cd);
    }
    if let Some(d) = dir {
        path.push(d);
    }
    path.push(name);
    Some(path.to_string_lossy().into_owned())
}

fn index_unit(dwarf: &gimli::Dwarf<R>, unit: gimli::Unit<R>) -> Result<UnitInfo, gimli::Error> {
    let mut dies = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut comp_dir = None;
    {
        let mut cursor = unit.entries();
        let mut depth: isize = 0;
        let mut first = true;
        while let Some(e) = cursor.next_dfs()? {
            let d = e.depth();
            if first {
                depth = d;
                first = false;
                if let Some(v) = e.attr_value(gimli::DW_AT_comp_dir) {
                    if let Ok(s) = dwarf.attr_string(&unit, v) {
                        comp_dir = Some(s.to_string_lossy()?.into_owned());
                    }
                }
            }
            let level = (d - depth) as usize;
            stack.truncate(level);
            let parent = stack.last().copied();
            dies.push(Die {
                offset: e.offset(),
                tag: e.tag(),
                parent,
            });
            stack.push(dies.len() - 1);
        }
    }
    let mut rows = Vec::new();
    let mut files: std::collections::HashMap<u64, Rc<str>> = std::collections::HashMap::new();
    if let Some(program) = unit.line_program.clone() {
        let mut it = program.rows();
        let mut index = 0usize;
        while let Some((header, row)) = it.next_row()? {
            let file = files
                .entry(row.file_index())
                .or_insert_with(|| {
                    Rc::from(
                        row.file(header)
                            .and_then(|fe| file_path(dwarf, &unit, header, fe, comp_dir.as_deref()))
                            .unwrap_or_default(),
                    )
                })
                .clone();
            rows.push((
                index,
                Row {
                    address: row.address(),
                    line: row.line().map_or(0, |l| l.get()),
                    file,
                    is_stmt: row.is_stmt(),
                    end_sequence: row.end_sequence(),
                    prologue_end: row.prologue_end(),
                },
            ));
            index += 1;
        }
    }
    rows.sort_by_key(|(i, r)| (r.address, !r.end_sequence, *i));
    Ok(UnitInfo {
        unit,
        dies,
        rows: rows.into_iter().map(|(_, r)| r).collect(),
        comp_dir,
        optimized: std::cell::OnceCell::new(),
    })
}
