//! Inline frames from DWARF `.debug_info` (with the addr2line crate over gimli): what GNU `addr2line -f -i`
//! prints for an address, which perf 6.1 (built without libbfd) turns into `(inlined)` frames of DWARF-unwound
//! callchains (tools/perf/util/srcline.c, `addr2inlines`).

use gimli::{EndianRcSlice, RunTimeEndian};
use object::{Object, ObjectSection};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

type Reader = EndianRcSlice<RunTimeEndian>;

/// The DWARF of one file, ready for address queries.
pub struct InlineInfo {
    ctx: addr2line::Context<Reader>,
    /// Functions GNU addr2line has already named by their DWARF name alone (see [`InlineInfo::names`]): the
    /// symbol-table name they took for good, or `None` when they keep the DWARF name.
    named: RefCell<HashMap<(usize, usize), Option<String>>>,
}

impl InlineInfo {
    /// Loads the DWARF sections (compressed ones included) of an ELF image; `None` when it has none usable.
    pub fn parse(data: &[u8]) -> Option<Self> {
        let file = object::File::parse(data).ok()?;
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let bytes: Rc<[u8]> = file
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .map(|d| Rc::from(&*d))
                .unwrap_or_else(|| Rc::from(&[][..]));
            Ok(EndianRcSlice::new(bytes, endian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        Some(InlineInfo {
            ctx,
            named: RefCell::new(HashMap::new()),
        })
    }

    /// Function names at `svma` as GNU addr2line 2.40 (`-f -i`) reports them, innermost (inlined) first;
    /// `None` when no DWARF covers the address. A frame whose DIE has no name is `None` in the list (GNU
    /// addr2line then names it from the symbol table). `symbol` is bfd's symbol lookup
    /// ([`super::elf::ElfInfo::addr2line_symbol`]: name and address).
    ///
    /// The innermost function, when its DIE gives no linkage name (a C++ function known by `DW_AT_name`
    /// only, such as an inlined template), is named as bfd's `_bfd_dwarf2_find_nearest_line` does, which
    /// keeps state across queries of one addr2line process (perf 6.1 keeps one per DSO): the first query
    /// that lands in it answers with the symbol containing the address; if that symbol starts where the
    /// function starts, the function takes the symbol's name for good, otherwise later queries answer with
    /// its DWARF name. Seen with addr2line 2.40 on a g++ -O2 program: an address of `__stable_sort<…>`
    /// inlined into `main` answers `main` the first time and `__stable_sort<…>` the second; and a
    /// `__move_merge<…>` clone that took its symbol's name is reported so as the caller of inlined frames
    /// later.
    pub fn names(
        &self,
        svma: u64,
        symbol: &dyn Fn(u64) -> Option<(String, u64)>,
    ) -> Option<Vec<Option<String>>> {
        let mut frames = self.ctx.find_frames(svma).skip_all_loads().ok()?;
        let mut names = Vec::new();
        let mut dies = Vec::new();
        let mut innermost_die = None;
        while let Ok(Some(frame)) = frames.next() {
            dies.push(frame.dw_die_offset);
            let function = frame.function.as_ref();
            let name = function.and_then(|f| f.raw_name().ok().map(|n| n.into_owned()));
            if names.is_empty() {
                let linkage = match (function, &name) {
                    (Some(f), Some(n)) => {
                        n.starts_with("_Z") || n.starts_with("_R") || non_mangled(f.language)
                    }
                    _ => true,
                };
                if !linkage {
                    innermost_die = frame.dw_die_offset;
                }
            }
            names.push(name);
        }
        if let Some(die) = innermost_die {
            if let Some((unit_key, low)) = self.function_start(svma, die) {
                let mut named = self.named.borrow_mut();
                match named.get(&(unit_key, die.0)) {
                    Some(Some(symbol_name)) => names[0] = Some(symbol_name.clone()),
                    Some(None) => {}
                    None => {
                        let found = symbol(svma);
                        let keep = found
                            .as_ref()
                            .filter(|(_, start)| *start == low)
                            .map(|(n, _)| n.clone());
                        named.insert((unit_key, die.0), keep);
                        if let Some((n, _)) = found {
                            names[0] = Some(n);
                        }
                    }
                }
            }
        }
        // A function that took a symbol's name keeps it as the caller of inlined frames too (bfd's
        // `bfd_find_inliner_info` reports `caller_func->name`, the same funcinfo).
        if names.len() > 1 && !self.named.borrow().is_empty() {
            if let Some(unit) = self.ctx.find_dwarf_and_unit(svma).skip_all_loads() {
                let unit_key = unit.unit as *const _ as usize;
                let named = self.named.borrow();
                for (name, die) in names.iter_mut().zip(&dies).skip(1) {
                    if let Some(Some(symbol_name)) = die.and_then(|d| named.get(&(unit_key, d.0))) {
                        *name = Some(symbol_name.clone());
                    }
                }
            }
        }
        (!names.is_empty()).then_some(names)
    }

    /// The unit's identity and the first address of the function DIE at `die` (its `DW_AT_low_pc`, else
    /// the first of its `DW_AT_ranges`, as bfd's `arange.low`).
    fn function_start(&self, svma: u64, die: gimli::UnitOffset<usize>) -> Option<(usize, u64)> {
        let unit = self.ctx.find_dwarf_and_unit(svma).skip_all_loads()?;
        let entry = unit.entry(die).ok()?;
        let low = match entry.attr_value(gimli::DW_AT_low_pc) {
            Some(v) => unit.attr_address(v).ok().flatten()?,
            None => unit.die_ranges(&entry).ok()?.next().ok().flatten()?.begin,
        };
        Some((unit.unit as *const _ as usize, low))
    }
}

/// Whether `language` does not mangle names, so that its `DW_AT_name` is a linkage name: bfd's `non_mangled`
/// (C, Ada, COBOL, Fortran 77, Pascal, PL/I, UPC, MIPS assembler). Every other language, Go and a unit without
/// `DW_AT_language` included, has its innermost function named from the symbol table: addr2line 2.40 names an
/// address of `reflect.name.readVarint` inlined into `reflect.name.name` (a Go binary) `reflect.name.name`, and
/// `runtime.usleep`'s body `runtime.usleep.abi0`, as perf 6.1 prints them.
fn non_mangled(language: Option<gimli::DwLang>) -> bool {
    use gimli::constants as c;
    matches!(
        language,
        Some(
            c::DW_LANG_C89
                | c::DW_LANG_C
                | c::DW_LANG_Ada83
                | c::DW_LANG_Cobol74
                | c::DW_LANG_Cobol85
                | c::DW_LANG_Fortran77
                | c::DW_LANG_Pascal83
                | c::DW_LANG_C99
                | c::DW_LANG_Ada95
                | c::DW_LANG_PLI
                | c::DW_LANG_UPC
                | c::DW_LANG_C11
                | c::DW_LANG_Mips_Assembler
        )
    )
}
