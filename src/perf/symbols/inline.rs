//! Inline frames from DWARF `.debug_info` (with the addr2line crate over gimli): what GNU `addr2line -f -i`
//! prints for an address, which perf 6.1 (built without libbfd) turns into `(inlined)` frames of DWARF-unwound
//! callchains (tools/perf/util/srcline.c, `addr2inlines`).

use gimli::{EndianRcSlice, RunTimeEndian};
use object::{Object, ObjectSection};
use std::rc::Rc;

type Reader = EndianRcSlice<RunTimeEndian>;

/// The DWARF of one file, ready for address queries.
pub struct InlineInfo {
    ctx: addr2line::Context<Reader>,
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
        Some(InlineInfo { ctx })
    }

    /// Function names at `svma`, innermost (inlined) first; `None` when no DWARF covers the address. A frame
    /// whose DIE has no name is `None` in the list (GNU addr2line then names it from the symbol table).
    pub fn names(&self, svma: u64) -> Option<Vec<Option<String>>> {
        let mut frames = self.ctx.find_frames(svma).skip_all_loads().ok()?;
        let mut names = Vec::new();
        while let Ok(Some(frame)) = frames.next() {
            let name = frame
                .function
                .as_ref()
                .and_then(|f| f.raw_name().ok().map(|n| n.into_owned()));
            names.push(name);
        }
        (!names.is_empty()).then_some(names)
    }
}
