//! Symbol tables, build-ids, load segments and debug links of one ELF file, with object.
//!
//! Symbol selection follows perf's `dso__load_sym` (tools/perf/util/symbol-elf.c) so names and offsets match
//! `perf script`: `.symtab` when present, else `.dynsym`; functions (`STT_FUNC`, `STT_GNU_IFUNC`) and objects
//! (`STT_OBJECT`) in any allocated section, labels (`STT_NOTYPE`, not hidden) only in sections whose name holds
//! "text" or "data"; zero-size symbols end where the next one starts, the last one a page past its start
//! rounded up (`symbols__fixup_end`); of several symbols at one address the best is kept (`choose_best_symbol`:
//! sized over zero-size, strong over weak, global over local, fewer leading underscores, longer name, first
//! seen). The synthesized `NAME@plt` symbols are perf's too, inserted after that fix-up (see [`ElfInfo::lookup`]).

use super::rbtree::SymbolTree;
use object::elf::{PT_LOAD, STB_GLOBAL, STB_WEAK, STT_FUNC, STT_GNU_IFUNC, STT_NOTYPE};
use object::read::elf::{ElfFile, FileHeader, ProgramHeader, SectionHeader, Sym};
use object::{Endianness, Object, SectionIndex};
use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::FileBytes;

/// One symbol: `[start, end)` in svma space. Its name is [`ElfInfo::symbol_name`]. 32 bytes: a large DSO's
/// table is allocated, and so faulted in page by page, at the start of a run, where it is most of the cost of
/// loading the DSO; names are made on their first hit ([`ElfInfo::symbol_name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Where the raw name is.
    raw: NameRef,
    /// Its node in perf's tree ([`PerfTree`]), or [`NO_NODE`].
    node: u32,
}

/// [`Symbol::node`] of a symbol that is no node of perf's tree.
const NO_NODE: u32 = u32::MAX;

/// How many table symbols one entry of [`ElfInfo`]'s search index stands for: 16 symbols are 512 bytes, eight cache
/// lines, and cc1's index is 14 KB.
const SEARCH_STRIDE: usize = 16;

/// A `PT_LOAD` segment: maps file offsets to svmas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// `p_offset`.
    pub offset: u64,
    /// `p_filesz`.
    pub file_size: u64,
    /// `p_vaddr`.
    pub vaddr: u64,
}

/// What one ELF file offers for symbolization.
#[derive(Clone, Debug, Default)]
pub struct ElfInfo {
    /// Function, object and label symbols sorted by start, one per address, with perf's end fix-ups.
    pub symbols: Vec<Symbol>,
    /// The synthesized `NAME@plt` symbols, sorted by start; perf adds them after fixing the ends of
    /// [`ElfInfo::symbols`], so the symbol before `.plt` (`_init`) still covers it and `.plt.sec`.
    pub plt_symbols: Vec<Symbol>,
    /// Symbols perf's tree holds beside [`ElfInfo::symbols`] when its load stopped early (see [`PerfTree`]).
    extra_symbols: Vec<Symbol>,
    /// The start of every [`SEARCH_STRIDE`]th of [`ElfInfo::symbols`], made on the first lookup: a lookup
    /// searches it (small enough to stay in cache), then one stretch of the table, where a search of the whole
    /// table met a cache miss at nearly every step (cc1's: 28,000 symbols, 880 KB).
    search_index: OnceCell<Vec<u64>>,
    /// The names as printed (demangled when the info demangles) by raw name, made on the first hit: a large
    /// C++ or Rust DSO has 10⁴–10⁵ symbols and a run hits few of them, and demangling them all up front would
    /// be most of `bport script`'s time on system-wide recordings. Shared, since every frame that hits the
    /// symbol carries it.
    shown: RefCell<HashMap<NameRef, Rc<str>, NameHash>>,
    /// perf's symbol tree where the sorted symbols do not tell its answer: where PLT symbols overlap a table
    /// symbol, or everywhere when its load stopped early.
    tree: Option<Box<PerfTree>>,
    /// Whether the symbols came from `.symtab` (else `.dynsym` or nothing).
    pub has_symtab: bool,
    /// The GNU build-id note.
    pub build_id: Option<Vec<u8>>,
    /// `PT_LOAD` segments in file order.
    pub segments: Vec<Segment>,
    /// `.gnu_debuglink` file name (the CRC is not checked: the build-id is, when the debug file has one).
    pub debuglink: Option<String>,
    /// ELF type is `ET_DYN` or `ET_EXEC` etc. (`e_type`).
    pub elf_type: u16,
    /// Whether the file carries `.debug_info` (addr2line then answers from DWARF, not from symbols).
    pub has_debug_info: bool,
    /// Symbols as GNU addr2line sees them, sorted by (address, table order), read on the first question: only
    /// DWARF-unwound frames ask.
    bfd_symbols: OnceCell<Vec<BfdSymbol>>,
    /// The names not in the file (`NAME@plt`), back to back.
    names: String,
    /// The file the symbols were read from: their names are read from its string tables on use.
    image: Image,
    /// The string tables of the symbol tables read (`.symtab`'s then `.dynsym`'s, or `.dynsym`'s): (file offset,
    /// size).
    strtabs: [(usize, usize); 2],
    /// Whether [`ElfInfo::symbol_name`] demangles.
    demangle: bool,
    /// `SHF_ALLOC` sections: (index, start, end), in section order.
    alloc_sections: Vec<(usize, u64, u64)>,
}

/// perf's tree for the addresses where its shape decides which symbol a lookup meets first (see
/// [`super::rbtree`]), as the inserts and erases that built it, replayed on the first lookup there: most runs
/// never look there, and a large DSO's tree cost a sixth of a short run when it was built at load.
///
/// Two cases need it. PLT symbols go in after the table's ends were fixed, so `.plt` lies under both the
/// stretched `_init` and a `NAME@plt`. And a load that stops: perf 6.1's `dso__load_sym` reads `.symtab`, then
/// `.dynsym`, into one tree, fixing ends and dropping aliases after each table; a symbol whose section index
/// is past the section table ends the load there (`elf_getscn` fails, `goto out_elf_end`), and the DSO keeps
/// what was inserted, without that table's fix-ups. rustc's BOLTed librustc_driver is such a file: its
/// `.dynsym` stops at `rust_metadata_rustc_driver_…` (section 48 of 44), so the dynamic copies of ICF-folded
/// functions read before it stay in the tree beside the alias `.symtab` chose, and perf names a sample by
/// whichever of them its walk meets first, not by the longest name.
#[derive(Clone, Debug)]
struct PerfTree {
    /// The addresses whose answer the tree gives: sorted, disjoint ranges. Only where symbols overlap: a
    /// large DSO's tree costs a tenth of a short run to replay, and most runs never look there.
    regions: Vec<std::ops::Range<u64>>,
    /// How many nodes the first table's pass inserted (node ids run on across the tables, in table order).
    first_len: u32,
    /// Which pass stopped the load, if one did.
    stopped: Option<usize>,
    /// The nodes each table's alias choice erased, in erase order, with their starts: every node is one of
    /// the symbols kept, an extra symbol, or one of these, so the inserts are known from them.
    erased: Erased,
    /// The tree, and what each node id stands for, made on the first lookup in a region.
    tree: OnceCell<(SymbolTree, Vec<TreeNode>)>,
}

/// The symbol a node of perf's tree stands for.
#[derive(Clone, Copy, Debug)]
enum TreeNode {
    /// No symbol (its start is 0).
    Gone,
    /// An alias perf erased: the `k`th of [`Erased`]'s `.symtab` then `.dynsym` lists, which holds its start.
    Erased(u32),
    /// An index into [`ElfInfo::symbols`].
    Table(u32),
    /// An index into [`ElfInfo::extra_symbols`].
    Extra(u32),
    /// An index into [`ElfInfo::plt_symbols`].
    Plt(u32),
}

impl PerfTree {
    fn covers(&self, svma: u64) -> bool {
        let i = self.regions.partition_point(|r| r.start <= svma);
        i > 0 && self.regions[i - 1].contains(&svma)
    }

    /// The inserts and erases that built perf's tree, replayed: the table symbols in table order (node ids
    /// are that order), each table's erased aliases, then the PLT symbols; and each node's symbol.
    fn build(&self, info: &ElfInfo) -> (SymbolTree, Vec<TreeNode>) {
        let tables = [(&info.symbols, 0u8), (&info.extra_symbols, 1)];
        let count = tables
            .iter()
            .flat_map(|(syms, _)| syms.iter())
            .map(|s| s.node)
            .chain(
                self.erased
                    .symtab
                    .iter()
                    .chain(&self.erased.dynsym)
                    .map(|e| e.0),
            )
            .filter(|&n| n != NO_NODE)
            .map(|n| n as usize + 1)
            .max()
            .unwrap_or(0);
        // Room for the PLT symbols' nodes too: growing it copied the table's nodes into fresh pages.
        let mut nodes = Vec::with_capacity(count + info.plt_symbols.len());
        nodes.resize(count, TreeNode::Gone);
        for (syms, kind) in tables {
            for (i, sym) in syms.iter().enumerate() {
                if let Some(n) = (sym.node != NO_NODE).then_some(sym.node as usize) {
                    nodes[n] = if kind == 0 {
                        TreeNode::Table(i as u32)
                    } else {
                        TreeNode::Extra(i as u32)
                    };
                }
            }
        }
        let erased: Vec<(u32, u64)> = (self.erased.symtab.iter())
            .chain(&self.erased.dynsym)
            .copied()
            .collect();
        for (k, &(n, _)) in erased.iter().enumerate() {
            nodes[n as usize] = TreeNode::Erased(k as u32);
        }
        // Each node's start, from its symbol or its erased alias (no copy of them all: see `SymbolTree`).
        let start = |n: usize| match nodes[n] {
            TreeNode::Erased(k) => erased[k as usize].1,
            node => info.node_symbol(node).map_or(0, |s| s.start),
        };
        let first = (self.first_len as usize).min(count);
        let mut tree = SymbolTree::with_capacity(count + info.plt_symbols.len());
        for n in 0..first {
            tree.insert(start(n));
        }
        if self.stopped != Some(0) {
            for &(id, _) in &self.erased.symtab {
                tree.erase(id as usize);
            }
        }
        for n in first..count {
            tree.insert(start(n));
        }
        for &(id, _) in &self.erased.dynsym {
            tree.erase(id as usize);
        }
        drop(erased);
        for (k, p) in info.plt_symbols.iter().enumerate() {
            tree.insert(p.start);
            nodes.push(TreeNode::Plt(k as u32));
        }
        (tree, nodes)
    }
}

/// A symbol as bfd's `_bfd_elf_find_function` considers it.
#[derive(Clone, Debug)]
struct BfdSymbol {
    start: u64,
    /// `st_size`, or 1 for zero-size symbols (bfd's "do not return 0 for the function's size").
    size: u64,
    function: bool,
    notype: bool,
    section: usize,
    order: usize,
    name: NameRef,
}

/// Why an ELF file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ElfError {
    /// Not ELF, or a 32/64-bit or byte-order combination object rejects.
    #[error("not a readable ELF file: {0}")]
    Parse(#[from] object::Error),
}

/// A symbol perf reads, before its alias choice and end fix-up. Small and `Copy`: a large table's candidates
/// are sorted and merged in place, where larger ones cost a large DSO's load a fifth of its time in page faults
/// alone.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    start: u64,
    /// `st_size`, or, once [`Candidate::fixed`], the end a table's fix-up gave it (a `.symtab` symbol among
    /// `.dynsym`'s, and every symbol kept).
    span: u64,
    /// Its node id in perf's tree: the symbols perf reads, in table order, across the tables (ties among equal
    /// starts go by it, as perf's rb-tree insertion does).
    node: u32,
    name: NameRef,
    /// Whether [`Candidate::span`] is the end.
    fixed: bool,
    /// Whether perf sees a size when it chooses among aliases: `st_size > 0`, or the last zero-size symbol at
    /// its address, whose end `symbols__fixup_end` already moved to the next start (it runs before
    /// `symbols__fixup_duplicate`), so that one wins over its zero-size aliases.
    sized: bool,
    binding: object::elf::SymbolBind,
}

/// Appends `name` to the arena and returns its place.
#[cfg(test)]
fn intern(names: &mut String, name: &str) -> (u32, u32) {
    let at = names.len() as u32;
    names.push_str(name);
    (at, name.len() as u32)
}

/// Hashes a [`NameRef`] (one `u64`) by one multiplication: the printed-name cache is asked once per frame
/// resolved, where SipHash cost a tenth of the lookup.
#[derive(Clone, Copy, Debug, Default)]
struct NameHash;

impl std::hash::BuildHasher for NameHash {
    type Hasher = NameHasher;
    fn build_hasher(&self) -> NameHasher {
        NameHasher(0)
    }
}

/// The hasher of [`NameHash`].
struct NameHasher(u64);

impl std::hash::Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing; hashbrown takes the top bits for its control bytes and the low ones for the slot,
        // so the product is folded to mix both.
        let x = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = x ^ (x >> 32);
    }
}

/// Where a symbol's name is: in the string table of the file (looked up on use: most symbols of a large DSO
/// are never hit) or in [`ElfInfo`]'s arena (synthesized names). Packed into 8 bytes ([`Name`] is its
/// unpacked form), which keeps a candidate at 32 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct NameRef(u64);

/// A [`NameRef`] unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Name {
    /// (place, length) in the arena.
    Arena(u32, u32),
    /// NUL-terminated at this offset of the string table of symbol table 0 (the first read) or 1.
    Table(u8, u32),
}

impl NameRef {
    const ARENA: u64 = 1 << 63;

    /// A name in the arena (its length below 2^31: the arena holds PLT names).
    fn arena(at: u32, len: u32) -> Self {
        NameRef(Self::ARENA | u64::from(len & 0x7fff_ffff) << 32 | u64::from(at))
    }

    /// A name in string table `table` (0 or 1).
    fn table(table: u8, off: u32) -> Self {
        NameRef(u64::from(table & 1) << 32 | u64::from(off))
    }

    fn get(self) -> Name {
        let low = self.0 as u32;
        if self.0 & Self::ARENA != 0 {
            Name::Arena(low, (self.0 >> 32) as u32 & 0x7fff_ffff)
        } else {
            Name::Table((self.0 >> 32) as u8 & 1, low)
        }
    }
}

/// The file an [`ElfInfo`] was read from, kept for the names and the addr2line view read on demand.
#[derive(Clone)]
struct Image(FileBytes);

impl Image {
    fn bytes(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl Default for Image {
    fn default() -> Self {
        Image(Arc::new(Vec::<u8>::new()))
    }
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Image({} bytes)", self.bytes().len())
    }
}

/// The synthesized `NAME@plt` symbols: (start, size, place of the name in `names`), and their names back to
/// back (one arena, where a formatted string per entry took a quarter of libpython's PLT).
#[derive(Default)]
pub(super) struct Plt {
    entries: Vec<(u64, u64, (u32, u32))>,
    names: String,
}

/// What [`read_candidates`] found: perf's symbols of each table read, each sorted by (start, node id).
struct Read {
    passes: Vec<Vec<Candidate>>,
    /// The table whose read stopped early, if one did (see [`PerfTree`]).
    stopped: Option<usize>,
}

/// The node ids (and starts) of the aliases each table's pass dropped, in the order perf erases them.
#[derive(Clone, Debug, Default)]
struct Erased {
    symtab: Vec<(u32, u64)>,
    dynsym: Vec<(u32, u64)>,
}

/// The tables perf 6.1 reads, in order: `.symtab`, then `.dynsym`, into the same tree (`dso__load_sym`, both
/// since 5.15's "perf symbol-elf: Decode dynsym even if symtab exists"), fixing ends and dropping aliases after
/// each; `.dynsym` alone when there is no `.symtab`.
fn symbol_tables<'d, H: FileHeader<Endian = Endianness>>(
    file: &ElfFile<'d, H>,
) -> Vec<object::read::elf::SymbolTable<'d, H>> {
    let symtab = file.elf_symbol_table();
    let dynsym = file.elf_dynamic_symbol_table();
    if symtab.is_empty() {
        vec![*dynsym]
    } else {
        vec![*symtab, *dynsym]
    }
}

/// The place in `data` of `table`'s string table, as object's `StringTable` reads it (the section's file range,
/// whatever its type; nothing when it is not in the file).
fn string_range<H: FileHeader<Endian = Endianness>>(
    data: &[u8],
    file: &ElfFile<'_, H>,
    table: &object::read::elf::SymbolTable<'_, H>,
) -> (usize, usize) {
    let endian = file.endian();
    let Ok(section) = file.elf_section_table().section(table.string_section()) else {
        return (0, 0);
    };
    if table.string_section().0 == 0 {
        return (0, 0);
    }
    let (at, len): (u64, u64) = (
        section.sh_offset(endian).into(),
        section.sh_size(endian).into(),
    );
    let (Ok(at), Ok(len)) = (usize::try_from(at), usize::try_from(len)) else {
        return (0, 0);
    };
    match at.checked_add(len) {
        Some(end) if end <= data.len() => (at, len),
        _ => (0, 0),
    }
}

/// Whether a symbol's name at `off` of `strings` can be read (in range and NUL-terminated, as object's
/// `StringTable::get` wants), and its first byte. `last_nul`: the place of the last NUL in `strings`, so a name
/// is terminated when it starts at or before it (one search per table, where a search per name is quadratic
/// on a table without NULs).
fn name_head(strings: &[u8], off: u32, last_nul: Option<usize>) -> Option<u8> {
    let off = off as usize;
    let first = *strings.get(off)?;
    last_nul.is_some_and(|nul| off <= nul).then_some(first)
}

/// Whether perf (`elf_sec__filter`) keeps a symbol of `index`: symbols of allocated sections only, labels only
/// in sections whose name holds "text" or "data". `etext`, a label at the end of `.fini`, is not a symbol for
/// perf, so an address past `_fini` belongs to `_fini` up to the next object (`_IO_stdin_used` in `.rodata`).
fn perf_keeps<H: FileHeader<Endian = Endianness>>(
    file: &ElfFile<'_, H>,
    index: SectionIndex,
    label: bool,
) -> bool {
    let endian = file.endian();
    let sections = file.elf_section_table();
    sections.section(index).is_ok_and(|s| {
        if s.sh_flags(endian).0 & object::elf::SHF_ALLOC.0 == 0 {
            return false;
        }
        if !label {
            return true;
        }
        let name = sections.section_name(endian, s).unwrap_or(b"");
        let has = |w: &[u8]| name.windows(w.len()).any(|x| x == w);
        has(b"text") || has(b"data")
    })
}

/// [`section_keeps`]: perf keeps a function or object of the section.
const KEEP_ANY: u8 = 1;
/// [`section_keeps`]: perf keeps a label of the section.
const KEEP_LABEL: u8 = 2;

/// [`perf_keeps`] for each section, by index ([`KEEP_ANY`], [`KEEP_LABEL`]): asked once per section, not once
/// per symbol.
fn section_keeps<H: FileHeader<Endian = Endianness>>(file: &ElfFile<'_, H>) -> Vec<u8> {
    (0..file.elf_section_table().len())
        .map(|i| {
            let index = SectionIndex(i);
            let any = if perf_keeps(file, index, false) {
                KEEP_ANY
            } else {
                0
            };
            let label = if perf_keeps(file, index, true) {
                KEEP_LABEL
            } else {
                0
            };
            any | label
        })
        .collect()
}

/// Whether perf reads a symbol of type `kind` and visibility `vis`: functions, objects, and labels not hidden.
fn perf_kind(kind: object::elf::SymbolType, vis: object::elf::SymbolVisibility) -> bool {
    kind == STT_FUNC
        || kind == STT_GNU_IFUNC
        || kind == object::elf::STT_OBJECT
        || (kind == STT_NOTYPE
            && !matches!(vis, object::elf::STV_HIDDEN | object::elf::STV_INTERNAL))
}

/// Whether perf's load stops at a symbol it reads: perf's `elf_getscn` fails on a section index past the
/// table (librustc_driver's `.dynsym` names a removed section 48 for `rust_metadata_rustc_driver_…`) and
/// `dso__load_sym` gives up there: what the tree holds stays, without the fix-ups.
fn stops_load<S: Sym>(sym: &S, endian: S::Endian, shnum: usize) -> bool {
    let shndx = sym.st_shndx(endian);
    sym.st_name(endian) != 0
        && shndx != object::elf::SHN_UNDEF
        && shndx != object::elf::SHN_ABS
        && usize::from(shndx.0) >= shnum
}

/// perf's symbols of each table, sorted by (start, table order), names left in the file. Only the first byte of a name is
/// read here (unnamed entries and ARM/AArch64 mapping symbols, `$x`, `$d`, are no symbols for perf).
fn read_candidates<H: FileHeader<Endian = Endianness>>(
    file: &ElfFile<'_, H>,
    tables: &[object::read::elf::SymbolTable<'_, H>],
    strtabs: &[(usize, usize); 2],
) -> Read {
    let endian = file.endian();
    let data = file.data();
    let shnum = file.elf_section_table().len();
    let mut read = Read {
        passes: Vec::with_capacity(tables.len()),
        stopped: None,
    };
    let mut node = 0u32;
    let keeps = section_keeps(file);
    for (pass, table) in tables.iter().enumerate() {
        let (at, len) = strtabs[pass];
        let strings = data.get(at..at + len).unwrap_or_default();
        let last_nul = memchr::memrchr(0, strings);
        // Room for every entry, and for the first table for the later ones merged into it: only the pages the
        // kept ones fill are ever touched, and the merge does not move them.
        let room = if pass == 0 {
            tables.iter().map(|t| t.len()).sum()
        } else {
            table.len()
        };
        let mut candidates: Vec<Candidate> = Vec::with_capacity(room);
        // The first byte of every entry's name (0: none, or unreadable), gathered in a loop of its own: the
        // names lie all over the string table (`.dynsym`'s in hash order), and with nothing else in the loop
        // the processor has dozens of those cache misses in flight where the filtering loop below had a few.
        // Reading them inside it was three quarters of reading a large `.dynsym` (cc1's 28,000 entries).
        let heads: Vec<u8> = (table.symbols().iter())
            .map(|sym| name_head(strings, sym.st_name(endian), last_nul).unwrap_or(0))
            .collect();
        for (index, sym) in table.enumerate() {
            let kind = sym.st_type();
            if !perf_kind(kind, sym.st_visibility()) {
                continue;
            }
            if stops_load(sym, endian, shnum) {
                read.stopped = Some(pass);
                break;
            }
            let Ok(Some(section)) = table.symbol_section(endian, sym, index) else {
                continue; // undefined, absolute or common
            };
            let off = sym.st_name(endian);
            let head = heads.get(index.0).copied().unwrap_or(0);
            let keep = keeps.get(section.0).copied().unwrap_or(0);
            let keep_bit = if kind == STT_NOTYPE {
                KEEP_LABEL
            } else {
                KEEP_ANY
            };
            if head == 0 || head == b'$' || keep & keep_bit == 0 {
                continue;
            }
            candidates.push(Candidate {
                start: sym.st_value(endian).into(),
                span: sym.st_size(endian).into(),
                fixed: false,
                node,
                name: NameRef::table(pass as u8, off),
                sized: false,
                binding: sym.st_bind(),
            });
            node += 1;
        }
        sort_by_start(&mut candidates);
        read.passes.push(candidates);
        if read.stopped.is_some() {
            break;
        }
    }
    read
}

/// Sorts candidates that are in node order by (start, node): a stable radix sort of their places by start
/// ([`RADIX_BITS`] a pass, over the bits their starts differ in: two or three passes for a DSO's table; see
/// [`packed_order`]), then the
/// candidates moved into place along the permutation's cycles. Comparison sorting took a fifth of
/// `bport script` on fp recordings (cc1's 28,000 `.dynsym` symbols: 700 instructions a symbol).
fn sort_by_start(candidates: &mut [Candidate]) {
    let n = candidates.len();
    debug_assert!(candidates.is_sorted_by_key(|c| c.node));
    if n < 64 || u32::try_from(n).is_err() {
        // (start, node) is unique, so the unstable sort gives the stable order.
        candidates.sort_unstable_by_key(|c| (c.start, c.node));
        return;
    }
    let min = candidates.iter().map(|c| c.start).min().unwrap_or(0);
    let max = candidates.iter().map(|c| c.start).max().unwrap_or(0);
    let width = u64::BITS - (max - min).leading_zeros();
    let mut order = if n >= LARGE_TABLE && width <= 32 {
        packed_order(candidates, min, width)
    } else {
        indirect_order(candidates, min, width)
    };
    if n >= LARGE_TABLE {
        // Position `i` takes the candidate now at `order[i]`: gathered into a copy, each read independent of
        // the others, then copied back.
        let sorted: Vec<Candidate> = order.iter().map(|&i| candidates[i as usize]).collect();
        candidates.copy_from_slice(&sorted);
        return;
    }
    // Position `i` takes the candidate now at `order[i]`, along the permutation's cycles.
    for i in 0..n {
        let mut at = i;
        while order[at] as usize != i {
            let src = order[at] as usize;
            candidates.swap(at, src);
            order[at] = at as u32;
            at = src;
        }
        order[at] = at as u32;
    }
}

/// [`sort_by_start`]'s bits a pass.
const RADIX_BITS: u32 = 11;

/// From how many candidates [`sort_by_start`] sorts them as a table far larger than the caches
/// (librustc_driver's, libLLVM's: hundreds of thousands of symbols), where a read at random is a memory round
/// trip: their places as packed words ([`packed_order`]), and the candidates moved into place through a copy,
/// each read independent of the others, where following the permutation's cycles in place makes each move
/// wait for the one before. Both take fresh pages (16 and 32 bytes a candidate, ~3 us a page on the VM
/// measured), which cost more than they save on smaller tables.
const LARGE_TABLE: usize = 1 << 16;

/// The places of `candidates` in (start, node) order, when their starts span at most 32 bits (a DSO's do):
/// each as one word, its start less `min` above its place, radix-sorted by the upper half. The passes read
/// the words in sequence, where sorting places by their candidates' starts read a start at random for every
/// place in every pass: on librustc_driver's and libLLVM's tables (hundreds of thousands of symbols) those
/// reads missed the caches and were half of sorting.
fn packed_order(candidates: &[Candidate], min: u64, width: u32) -> Vec<u32> {
    let mut words: Vec<u64> = (candidates.iter().enumerate())
        .map(|(i, c)| (c.start - min) << 32 | i as u64)
        .collect();
    let mut next = vec![0u64; words.len()];
    let mut counts = vec![0usize; 1 << RADIX_BITS];
    let mut shift = 32;
    while shift < 32 + width {
        radix_pass(&words, &mut next, &mut counts, |w| {
            (w >> shift) as usize & ((1 << RADIX_BITS) - 1)
        });
        std::mem::swap(&mut words, &mut next);
        shift += RADIX_BITS;
    }
    drop(next);
    words.into_iter().map(|w| w as u32).collect()
}

/// The places of `candidates` in (start, node) order, sorted by their candidates' starts ([`packed_order`] for
/// large tables).
fn indirect_order(candidates: &[Candidate], min: u64, width: u32) -> Vec<u32> {
    let n = candidates.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut next = vec![0u32; n];
    let mut counts = vec![0usize; 1 << RADIX_BITS];
    let mut shift = 0;
    while shift < width {
        radix_pass(&order, &mut next, &mut counts, |i| {
            ((candidates[i as usize].start - min) >> shift) as usize & ((1 << RADIX_BITS) - 1)
        });
        std::mem::swap(&mut order, &mut next);
        shift += RADIX_BITS;
    }
    order
}

/// One stable counting-sort pass of `from` into `to` by `digit` (below `counts.len()`).
fn radix_pass<T: Copy>(from: &[T], to: &mut [T], counts: &mut [usize], digit: impl Fn(T) -> usize) {
    counts.fill(0);
    for &x in from {
        counts[digit(x)] += 1;
    }
    let mut at = 0;
    for c in counts.iter_mut() {
        let here = *c;
        *c = at;
        at += here;
    }
    for &x in from {
        let d = digit(x);
        to[counts[d]] = x;
        counts[d] += 1;
    }
}

/// GNU addr2line's view of `data`'s symbols (bfd `maybe_function_sym`): every symbol but files, sections,
/// objects and TLS, in any section, in table order; bfd reads one table, `.symtab` when there is one, and stops
/// where perf's read of it stops. Sorted by (start, table order).
fn bfd_symbols_of(data: &[u8]) -> Vec<BfdSymbol> {
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Elf32) => {
            bfd_symbols_as::<object::elf::FileHeader32<Endianness>>(data)
        }
        Ok(object::FileKind::Elf64) => {
            bfd_symbols_as::<object::elf::FileHeader64<Endianness>>(data)
        }
        _ => Vec::new(),
    }
}

fn bfd_symbols_as<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Vec<BfdSymbol> {
    let Ok(file) = ElfFile::<H>::parse(data) else {
        return Vec::new();
    };
    let endian = file.endian();
    let shnum = file.elf_section_table().len();
    let tables = symbol_tables(&file);
    let Some(table) = tables.first() else {
        return Vec::new();
    };
    let (at, len) = string_range(data, &file, table);
    let strings = data.get(at..at + len).unwrap_or_default();
    let last_nul = memchr::memrchr(0, strings);
    let mut out = Vec::new();
    for (order, (index, sym)) in table.enumerate().enumerate() {
        let kind = sym.st_type();
        if perf_kind(kind, sym.st_visibility()) && stops_load(sym, endian, shnum) {
            break;
        }
        if matches!(
            kind,
            object::elf::STT_FILE
                | object::elf::STT_SECTION
                | object::elf::STT_OBJECT
                | object::elf::STT_TLS
        ) {
            continue;
        }
        let Ok(Some(section)) = table.symbol_section(endian, sym, index) else {
            continue;
        };
        if name_head(strings, sym.st_name(endian), last_nul).is_none() {
            continue;
        }
        let size: u64 = sym.st_size(endian).into();
        out.push(BfdSymbol {
            start: sym.st_value(endian).into(),
            size: size.max(1),
            function: kind == STT_FUNC || kind == STT_GNU_IFUNC,
            notype: kind == STT_NOTYPE,
            section: section.0,
            order,
            name: NameRef::table(0, sym.st_name(endian)),
        });
    }
    // (start, order) is unique, so the unstable sort gives the stable order.
    out.sort_unstable_by_key(|b| (b.start, b.order));
    out
}

/// Merges `.dynsym`'s candidates (sorted) into the kept `.symtab` ones (sorted), in place from the back:
/// linear, where sorting the whole again cost a large DSO's load a tenth more, and without a third copy.
fn merge_sorted(mut kept: Vec<Candidate>, second: Vec<Candidate>) -> Vec<Candidate> {
    let key = |c: &Candidate| (c.start, c.node);
    let (mut a, mut b) = (kept.len(), second.len());
    let Some(&filler) = second.first() else {
        return kept;
    };
    kept.resize(a + b, filler);
    while b > 0 {
        let out = a + b - 1;
        if a > 0 && key(&kept[a - 1]) > key(&second[b - 1]) {
            kept[out] = kept[a - 1];
            a -= 1;
        } else {
            kept[out] = second[b - 1];
            b -= 1;
        }
    }
    kept
}

/// The `PT_LOAD` segments of an ELF image, without parsing its symbols.
pub fn segments(data: &[u8]) -> Option<Vec<Segment>> {
    use object::read::elf::ElfFile64;
    let file = ElfFile64::<Endianness>::parse(data).ok()?;
    let endian = file.endian();
    Some(
        file.elf_program_headers()
            .iter()
            .filter(|ph| ph.p_type(endian) == PT_LOAD)
            .map(|ph| Segment {
                offset: ph.p_offset(endian),
                file_size: ph.p_filesz(endian),
                vaddr: ph.p_vaddr(endian),
            })
            .collect(),
    )
}

/// Whether an ELF image has a `.debug_info` section with contents.
pub fn has_debug_info(data: &[u8]) -> bool {
    use object::ObjectSection;
    object::File::parse(data)
        .ok()
        .and_then(|f| {
            f.section_by_name(".debug_info")
                .map(|s| s.size() > 0 && s.file_range().is_some())
        })
        .unwrap_or(false)
}

/// Reads the build-id note of an ELF image without parsing its symbols.
pub fn build_id(data: &[u8]) -> Option<Vec<u8>> {
    let file = object::File::parse(data).ok()?;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}

impl ElfInfo {
    /// Parses an ELF image (32 or 64 bit, either byte order), from a copy of `data`.
    pub fn parse(data: &[u8]) -> Result<Self, ElfError> {
        Self::parse_with(data, false)
    }

    /// Parses an ELF image from a copy of `data`, demangling names first when `demangle` is set: perf demangles
    /// before it chooses among aliases (the longer *demangled* name wins), so the choice depends on it.
    pub fn parse_with(data: &[u8], demangle: bool) -> Result<Self, ElfError> {
        Self::parse_full(Arc::new(data.to_vec()), demangle, None)
    }

    /// Parses the ELF image `data`, which the info keeps: symbol names are read from it on use. The
    /// `NAME@plt` symbols come from `plt_from` (the runtime image) instead of `data` when given: a separate
    /// debug file has no usable `.plt`, and perf synthesizes them from the runtime file
    /// (`dso__synthesize_plt_symbols(dso, runtime_ss)`).
    pub fn parse_full(
        data: FileBytes,
        demangle: bool,
        plt_from: Option<&[u8]>,
    ) -> Result<Self, ElfError> {
        let plt = plt_from.map(|rt| {
            ElfFile::<object::elf::FileHeader64<Endianness>>::parse(rt)
                .map(|file| synthesize_plt(&file, file.endian()))
                .unwrap_or_default()
        });
        Self::parse_kind(Image(data), demangle, Some(plt))
    }

    /// What [`ElfInfo::parse_full`] gives but the symbols: the build-id, segments, debug link, whether a
    /// `.symtab` is there. For choosing among a DSO's candidate files, whose symbols are read only from the
    /// one chosen.
    pub fn parse_layout(data: FileBytes) -> Result<Self, ElfError> {
        Self::parse_kind(Image(data), false, None)
    }

    /// `plt`: `None` for the layout only, else the symbols too, with these PLT symbols when given.
    fn parse_kind(
        image: Image,
        demangle: bool,
        plt: Option<Option<Plt>>,
    ) -> Result<Self, ElfError> {
        match object::FileKind::parse(image.bytes())? {
            object::FileKind::Elf32 => {
                Self::parse_as::<object::elf::FileHeader32<Endianness>>(image, demangle, plt)
            }
            _ => Self::parse_as::<object::elf::FileHeader64<Endianness>>(image, demangle, plt),
        }
    }

    fn parse_as<H: FileHeader<Endian = Endianness>>(
        image: Image,
        demangle: bool,
        plt: Option<Option<Plt>>,
    ) -> Result<Self, ElfError> {
        let data = image.bytes();
        let file = ElfFile::<H>::parse(data)?;
        let endian = file.endian();
        let mut info = ElfInfo {
            build_id: file.build_id().ok().flatten().map(<[u8]>::to_vec),
            elf_type: file.elf_header().e_type(endian).0,
            demangle,
            ..Default::default()
        };
        info.read_layout(&file);
        let tables = symbol_tables(&file);
        info.has_symtab = tables.len() == 2;
        let Some(plt) = plt else {
            info.image = image;
            return Ok(info);
        };
        for (t, table) in tables.iter().enumerate() {
            info.strtabs[t] = string_range(data, &file, table);
        }
        let read = read_candidates(&file, &tables, &info.strtabs);
        let plt = plt.unwrap_or_else(|| synthesize_plt::<H>(&file, endian));
        info.image = image;
        info.place_symbols(read, plt);
        Ok(info)
    }

    /// Segments, debug link, `.debug_info` presence and the allocated sections.
    fn read_layout<H: FileHeader<Endian = Endianness>>(&mut self, file: &ElfFile<'_, H>) {
        let endian = file.endian();
        for ph in file.elf_program_headers() {
            if ph.p_type(endian) == PT_LOAD {
                self.segments.push(Segment {
                    offset: ph.p_offset(endian).into(),
                    file_size: ph.p_filesz(endian).into(),
                    vaddr: ph.p_vaddr(endian).into(),
                });
            }
        }
        if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
            self.debuglink = Some(String::from_utf8_lossy(name).into_owned());
        }
        let sections = file.elf_section_table();
        self.has_debug_info = sections
            .section_by_name(endian, b".debug_info")
            .is_some_and(|(_, s)| s.sh_type(endian) != object::elf::SHT_NOBITS);
        for (index, section) in sections.enumerate() {
            if section.sh_flags(endian).0 & object::elf::SHF_ALLOC.0 != 0 {
                let start: u64 = section.sh_addr(endian).into();
                let size: u64 = section.sh_size(endian).into();
                self.alloc_sections
                    .push((index.0, start, start.saturating_add(size)));
            }
        }
    }

    /// The name `name` refers to, as the symbol table has it (invalid UTF-8 replaced, as perf's printing
    /// shows it).
    fn name_text(&self, name: NameRef) -> Cow<'_, str> {
        match name.get() {
            Name::Arena(at, len) => Cow::Borrowed(self.arena((at, len))),
            Name::Table(..) => {
                let bytes = self.name_bytes(name);
                // `from_utf8` first: its check is several times faster than `from_utf8_lossy`'s on valid names.
                match std::str::from_utf8(bytes) {
                    Ok(t) => Cow::Borrowed(t),
                    Err(_) => String::from_utf8_lossy(bytes),
                }
            }
        }
    }

    /// The bytes of the name `name` refers to, up to its NUL.
    fn name_bytes(&self, name: NameRef) -> &[u8] {
        match name.get() {
            Name::Arena(at, len) => self.arena((at, len)).as_bytes(),
            Name::Table(t, off) => {
                let (start, len) = self.strtabs[usize::from(t) & 1];
                let strings = self
                    .image
                    .bytes()
                    .get(start..start + len)
                    .unwrap_or_default();
                let tail = strings.get(off as usize..).unwrap_or_default();
                &tail[..memchr::memchr(0, tail).unwrap_or(tail.len())]
            }
        }
    }

    /// perf's symbol selection over what [`read_candidates`] read: per table, ends fixed and aliases dropped;
    /// then the `NAME@plt` symbols, and perf's tree where its shape decides a lookup.
    fn place_symbols(&mut self, read: Read, plt: Plt) {
        let Read { passes, stopped } = read;
        // perf's tree as it was built: node ids are the symbols in insertion order (`.symtab`'s, then
        // `.dynsym`'s); only made into a replayable tree when a lookup will need it.
        let first_len = passes.first().map_or(0, Vec::len) as u32;
        let mut passes = passes.into_iter();
        let first = passes.next().unwrap_or_default();
        let second = passes.next().unwrap_or_default();
        let demangle = self.demangle;
        let raw = |c: &Candidate| Symbol {
            start: c.start,
            end: c.start.saturating_add(c.span),
            raw: c.name,
            node: c.node,
        };
        let mut erased = Erased::default();
        let names = |n: NameRef| self.name_bytes(n);
        let (symbols, extra_symbols): (Vec<Symbol>, Vec<Symbol>);
        if stopped == Some(0) {
            // perf's tree holds the `.symtab` symbols read so far, aliases and zero sizes as they are; no
            // `.dynsym`, no PLT symbols (`dso__load` synthesizes them only after a successful load).
            extra_symbols = first.iter().map(raw).collect();
            let kept = select_candidates(first, demangle, &mut Vec::new(), &names);
            symbols = to_symbols(kept, false);
        } else {
            let mut kept = select_candidates(first, demangle, &mut erased.symtab, &names);
            if stopped == Some(1) {
                // The `.symtab` pass finished (ends fixed, aliases dropped); the `.dynsym` symbols read before
                // the stop sit in the tree beside them, aliases of table symbols included, found by the walk.
                extra_symbols = second.iter().map(raw).collect();
            } else {
                extra_symbols = Vec::new();
                if !second.is_empty() {
                    let merged = merge_sorted(kept, second);
                    kept = select_candidates(merged, demangle, &mut erased.dynsym, &names);
                }
            }
            symbols = to_symbols(kept, true);
        }
        self.symbols = symbols;
        self.extra_symbols = extra_symbols;
        let regions = if stopped.is_some() {
            std::iter::once(0..u64::MAX).collect()
        } else {
            self.names = plt.names;
            self.plt_symbols = (plt.entries.iter())
                .map(|&(start, size, (at, len))| Symbol {
                    start,
                    end: start.saturating_add(size),
                    raw: NameRef::arena(at, len),
                    node: NO_NODE,
                })
                .collect();
            self.overlap_region()
        };
        if !regions.is_empty() {
            self.tree = Some(Box::new(PerfTree {
                regions,
                first_len,
                stopped,
                erased,
                tree: OnceCell::new(),
            }));
        }
        debug_assert!(self.plt_symbols.is_sorted_by_key(|s| s.start));
        self.names.shrink_to_fit();
    }

    #[cfg(test)]
    fn intern(&mut self, name: &str) -> NameRef {
        let (at, len) = intern(&mut self.names, name);
        NameRef::arena(at, len)
    }

    /// Where perf's tree, not the sorted symbols, tells the answer. A table symbol whose range holds PLT
    /// symbols: perf's answer is the first node on its way down. And a label inside a function (node's
    /// `construct_stub_create_deopt_addr` inside `Builtins_JSConstructStubGeneric`, an asm `inner:` inside
    /// its C function) overlaps it once its zero size is stretched to the next start: there too perf answers
    /// with the first node on its way down, which is often the enclosing function, not the nearest start.
    fn overlap_region(&self) -> Vec<std::ops::Range<u64>> {
        let mut ranges: Vec<std::ops::Range<u64>> = Vec::new();
        for p in &self.plt_symbols {
            if let Some(c) = Self::lookup_in(&self.symbols, p.start) {
                ranges.push(c.start..c.end.max(p.end));
            }
        }
        let mut outer: Option<(u64, u64)> = None;
        for s in &self.symbols {
            match outer {
                Some((start, end)) if s.start < end => {
                    ranges.push(start..end.max(s.end));
                    outer = Some((start, end.max(s.end)));
                }
                _ => outer = Some((s.start, s.end)),
            }
        }
        ranges.sort_unstable_by_key(|r| r.start);
        let mut merged: Vec<std::ops::Range<u64>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        merged
    }

    /// The name of `sym` (one of [`ElfInfo::symbols`]) as perf prints it: demangled when the info was parsed
    /// with demangling, made on the first call.
    pub fn symbol_name(&self, sym: &Symbol) -> Rc<str> {
        if let Some(name) = self.shown.borrow().get(&sym.raw) {
            return name.clone();
        }
        let raw = self.raw_name(sym);
        let name: Rc<str> = if self.demangle {
            Rc::from(super::demangle::demangle(&raw))
        } else {
            Rc::from(&*raw)
        };
        self.shown.borrow_mut().insert(sym.raw, name.clone());
        name
    }

    /// The name of `sym` as the symbol table has it.
    pub fn raw_name(&self, sym: &Symbol) -> Cow<'_, str> {
        self.name_text(sym.raw)
    }

    fn arena(&self, (at, len): (u32, u32)) -> &str {
        &self.names[at as usize..(at + len) as usize]
    }

    /// The function name GNU addr2line (`-f`, binutils 2.40) reports for `svma` when the file has no debug
    /// information: the nearest symbol at or below it in the same section, ties broken by bfd's `better_fit`
    /// (covers the address, function over non-function, typed over untyped, smaller size, else first in
    /// table order). perf 6.1 built without libbfd asks addr2line for inline frames of every DWARF-unwound
    /// frame and shows this name as an `(inlined)` frame when it differs from its own symbol's name.
    pub fn addr2line_function(&self, svma: u64) -> Option<Cow<'_, str>> {
        self.addr2line_symbol(svma).map(|(name, _)| name)
    }

    /// [`ElfInfo::addr2line_function`] with the chosen symbol's address.
    pub fn addr2line_symbol(&self, svma: u64) -> Option<(Cow<'_, str>, u64)> {
        let section = self
            .alloc_sections
            .iter()
            .find(|(_, start, end)| (*start..*end).contains(&svma))?
            .0;
        let bfd = self
            .bfd_symbols
            .get_or_init(|| bfd_symbols_of(self.image.bytes()));
        let end = bfd.partition_point(|b| b.start <= svma);
        let group_start = bfd[..end]
            .iter()
            .rev()
            .find(|b| b.section == section)?
            .start;
        let mut best: Option<&BfdSymbol> = None;
        for b in bfd[..end]
            .iter()
            .filter(|b| b.start == group_start && b.section == section)
        {
            let Some(cur) = best else {
                best = Some(b);
                continue;
            };
            let better = if cur.start + cur.size <= svma {
                b.size > cur.size
            } else if b.start + b.size <= svma {
                false
            } else if cur.function != b.function {
                b.function
            } else if cur.notype != b.notype {
                cur.notype
            } else {
                b.size < cur.size
            };
            if better {
                best = Some(b);
            }
        }
        best.map(|b| (self.name_text(b.name), b.start))
    }

    /// The symbol containing `svma` as perf 6.1 finds it: where PLT and table symbols overlap (`.plt` under the
    /// stretched `_init`), the first of them on the way down perf's tree; elsewhere the only one.
    pub fn lookup(&self, svma: u64) -> Option<&Symbol> {
        if let Some(t) = self.tree.as_deref().filter(|t| t.covers(svma)) {
            let (tree, nodes) = t.tree.get_or_init(|| t.build(self));
            // A node without a symbol (erased, so never met) has an empty range.
            let end = |id: usize, start: u64| self.node_symbol(nodes[id]).map_or(start, |s| s.end);
            return self.node_symbol(nodes[tree.find(svma, end)?]);
        }
        Self::lookup_in(&self.plt_symbols, svma).or_else(|| self.lookup_table(svma))
    }

    /// [`ElfInfo::lookup_in`] the table symbols, through [`ElfInfo::search_index`].
    fn lookup_table(&self, svma: u64) -> Option<&Symbol> {
        let symbols = &self.symbols;
        let index = self.search_index.get_or_init(|| {
            symbols
                .iter()
                .step_by(SEARCH_STRIDE)
                .map(|s| s.start)
                .collect()
        });
        if index.len() != symbols.len().div_ceil(SEARCH_STRIDE) {
            return Self::lookup_in(symbols, svma);
        }
        // The table is sorted by start: every symbol before the last indexed one at or below `svma` starts at
        // or below it, and none from the next indexed one on does.
        let block = index.partition_point(|&start| start <= svma);
        let from = block.saturating_sub(1) * SEARCH_STRIDE;
        let to = (block * SEARCH_STRIDE).min(symbols.len());
        let pos = from + symbols[from..to].partition_point(|s| s.start <= svma);
        let sym = symbols.get(pos.checked_sub(1)?)?;
        (svma < sym.end).then_some(sym)
    }

    fn node_symbol(&self, node: TreeNode) -> Option<&Symbol> {
        match node {
            TreeNode::Gone | TreeNode::Erased(_) => None,
            TreeNode::Table(i) => self.symbols.get(i as usize),
            TreeNode::Extra(i) => self.extra_symbols.get(i as usize),
            TreeNode::Plt(i) => self.plt_symbols.get(i as usize),
        }
    }

    fn lookup_in(symbols: &[Symbol], svma: u64) -> Option<&Symbol> {
        let pos = symbols.partition_point(|s| s.start <= svma);
        let sym = symbols.get(pos.checked_sub(1)?)?;
        (svma < sym.end).then_some(sym)
    }

    /// The svma of the first byte of a mapping at file offset `pgoff` (page-aligned, as mmap records carry it).
    /// A page can hold the end of one segment and the start of the next (lld places them so: file offset 0x13000
    /// starts both the read-only segment's last page and the text segment's first one), and each segment gets
    /// its own mapping: the segment whose first page is `pgoff` is the one mapped there.
    pub fn mapping_start_svma(&self, pgoff: u64) -> Option<u64> {
        const PAGE: u64 = 0x1000;
        self.segments
            .iter()
            .find(|s| s.offset & !(PAGE - 1) == pgoff && s.offset >= pgoff)
            .map(|s| s.vaddr.wrapping_sub(s.offset - pgoff))
            .or_else(|| self.file_offset_to_svma(pgoff))
    }

    /// The svma of a byte at file offset `offset`: the first segment holding it, else the first whose last page
    /// holds it. A mapping covers whole pages, and perf, which moves symbols into file-offset space instead of
    /// addresses into svma space, names an address in the page after `.fini`'s end by the symbol before it.
    pub fn file_offset_to_svma(&self, offset: u64) -> Option<u64> {
        const PAGE: u64 = 0x1000;
        let exact = |s: &&Segment| offset >= s.offset && offset - s.offset < s.file_size.max(1);
        let paged = |s: &&Segment| {
            offset >= s.offset
                && offset
                    < s.offset
                        .saturating_add(s.file_size.max(1))
                        .next_multiple_of(PAGE)
        };
        self.segments
            .iter()
            .find(exact)
            .or_else(|| self.segments.iter().find(paged))
            .map(|s| offset - s.offset + s.vaddr)
    }
}

/// perf 6.1's `dso__synthesize_plt_symbols` on x86_64: one `NAME@plt` symbol per `.rela.plt` entry, in order,
/// after a header of one entry, with `.plt`'s `sh_entsize` as the entry size. lld writes 0 there: perf then
/// puts every `NAME@plt` at `.plt`'s start with size 0 (its `-vvvv` log on rustc's binary shows them), and
/// though they only hold that one address, they sit in its tree above the stretched `_fini`, so a sample
/// further in `.plt` is `[unknown]`, not `_fini+0x…`. `.plt.sec` is only known to perf 6.4+.
fn synthesize_plt<H: FileHeader<Endian = Endianness>>(
    file: &ElfFile<'_, H>,
    endian: Endianness,
) -> Plt {
    let mut out = Plt::default();
    use object::read::elf::Rela;
    let sections = file.elf_section_table();
    let Some((_, rela_plt)) = sections.section_by_name(endian, b".rela.plt") else {
        return out;
    };
    let Ok(Some((relocs, _))) = rela_plt.rela(endian, file.data()) else {
        return out;
    };
    let Some((_, plt)) = sections.section_by_name(endian, b".plt") else {
        return out;
    };
    let entry: u64 = plt.sh_entsize(endian).into();
    let base: u64 = plt.sh_addr(endian).into() + entry;
    let dynsym = file.elf_dynamic_symbol_table();
    out.entries.reserve(relocs.len());
    for (i, rela) in relocs.iter().enumerate() {
        let index = rela.r_sym(endian, false) as usize;
        let name = dynsym
            .symbol(object::SymbolIndex(index))
            .ok()
            .and_then(|sym| sym.name(endian, dynsym.strings()).ok())
            .unwrap_or(b"");
        let at = out.names.len();
        out.names.push_str(&String::from_utf8_lossy(name));
        out.names.push_str("@plt");
        let len = out.names.len() - at;
        let (Ok(at), Ok(len)) = (u32::try_from(at), u32::try_from(len)) else {
            break;
        };
        out.entries
            .push((base + i as u64 * entry, entry, (at, len)));
    }
    out
}

fn leading_underscores(name: &str) -> usize {
    name.bytes().take_while(|&b| b == b'_').count()
}

/// perf's `choose_best_symbol`: true when `a` should be kept over `b` (both start at one address). `a_name`
/// and `b_name` are the names perf compares: demangled when it demangles (`dso__load_sym` demangles before
/// `symbols__fixup_duplicate` chooses).
fn a_is_better(a: &Candidate, a_name: &str, b: &Candidate, b_name: &str) -> bool {
    if let Some(decided) = decided_without_names(a, b) {
        return decided;
    }
    let (ua, ub) = (leading_underscores(a_name), leading_underscores(b_name));
    if ua != ub {
        return ua < ub;
    }
    if a_name.len() != b_name.len() {
        return a_name.len() > b_name.len();
    }
    true
}

/// The part of `choose_best_symbol` that does not look at names: sized over zero-size, strong over weak,
/// global over local.
fn decided_without_names(a: &Candidate, b: &Candidate) -> Option<bool> {
    if a.sized != b.sized {
        return Some(a.sized);
    }
    let (a_weak, b_weak) = (a.binding == STB_WEAK, b.binding == STB_WEAK);
    if a_weak != b_weak {
        return Some(!a_weak);
    }
    let (a_global, b_global) = (a.binding == STB_GLOBAL, b.binding == STB_GLOBAL);
    if a_global != b_global {
        return Some(a_global);
    }
    None
}

/// Whether two mangled names differ only in a constructor or destructor variant (`C1`/`C2`, `D0`/`D1`/`D2`):
/// the complete and base object versions g++ emits at one address, which demangle to the same text, so
/// perf's choice between them falls to the first seen without demangling either.
fn same_demangled_text(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() || !a.starts_with(b"_Z") {
        return false;
    }
    let mut diffs = a.iter().zip(b).enumerate().filter(|(_, (x, y))| x != y);
    match (diffs.next(), diffs.next()) {
        (Some((i, (x, y))), None) => {
            i > 0 && matches!(a[i - 1], b'C' | b'D') && x.is_ascii_digit() && y.is_ascii_digit()
        }
        _ => false,
    }
}

/// One symbol per address, the best of each group of aliases, with its raw name in `names`. Only aliases are
/// demangled here (perf compares their demangled names); every other name waits for its first hit.
#[cfg(test)]
fn select_symbols(candidates: Vec<Candidate>, demangle: bool, names: &str) -> Vec<Symbol> {
    let name = |n: NameRef| match n.get() {
        Name::Arena(at, len) => &names.as_bytes()[at as usize..(at + len) as usize],
        Name::Table(..) => &[][..],
    };
    to_symbols(
        select_candidates(candidates, demangle, &mut Vec::new(), &name),
        true,
    )
}

/// perf's `symbols__fixup_end` then `symbols__fixup_duplicate` over one table's symbols (and those an earlier
/// table left, which come first at their address): the best of each group of aliases, its end set, sorted by
/// start. Pushes the `order` of each alias dropped onto `erased`, in the order perf erases them.
fn select_candidates<'n>(
    mut candidates: Vec<Candidate>,
    demangle: bool,
    erased: &mut Vec<(u32, u64)>,
    names: &dyn Fn(NameRef) -> &'n [u8],
) -> Vec<Candidate> {
    // Among equal starts the insertion order decides the last tie, as perf's rb-tree insertion does.
    if !candidates.is_sorted_by_key(|c| (c.start, c.node)) {
        candidates.sort_unstable_by_key(|c| (c.start, c.node));
    }
    for i in 0..candidates.len() {
        let last_at_start = candidates
            .get(i + 1)
            .is_none_or(|n| n.start != candidates[i].start);
        let c = &mut candidates[i];
        c.sized = c.fixed || c.span > 0 || last_at_start;
    }
    let kept_len = choose_aliases(&mut candidates, demangle, erased, names);
    candidates.truncate(kept_len);
    let mut kept = candidates;
    for i in 0..kept.len() {
        if kept[i].fixed {
            continue;
        }
        let c = &kept[i];
        let end = if c.span > 0 {
            c.start.saturating_add(c.span)
        } else if let Some(next) = kept.get(i + 1) {
            next.start
        } else {
            // perf 6.1's `symbols__fixup_end`: `roundup(curr->start, 4096) + 4096` for the last one.
            c.start.next_multiple_of(0x1000).saturating_add(0x1000)
        };
        kept[i].span = end;
        kept[i].fixed = true;
    }
    kept
}

/// perf's `symbols__fixup_duplicate` over candidates sorted by (start, node): the best of each group of
/// aliases is moved to the front, in order, and their count returned; the node (and start) of each alias
/// dropped is pushed onto `erased`, in the order perf erases them. Names are demangled only when the cheaper
/// rules leave the choice to them.
fn choose_aliases<'n>(
    candidates: &mut [Candidate],
    demangle: bool,
    erased: &mut Vec<(u32, u64)>,
    names: &dyn Fn(NameRef) -> &'n [u8],
) -> usize {
    let shown = |name: NameRef| {
        let name = String::from_utf8_lossy(names(name));
        if demangle {
            super::demangle::demangle(&name)
        } else {
            name.into_owned()
        }
    };
    // Bytes, not text: equal bytes are equal text, and unequal bytes whose lossy text is equal are left to
    // the full comparison, which gives the same answer.
    let same_text = |a: NameRef, b: NameRef| {
        if a == b {
            return true;
        }
        let (a, b) = (names(a), names(b));
        a == b || same_demangled_text(a, b)
    };
    let mut kept = 0;
    let mut i = 0;
    // The names compared in the current group of aliases, as perf compares them.
    let mut group_names: Vec<(NameRef, String)> = Vec::new();
    while i < candidates.len() {
        let mut best = i;
        let mut j = i + 1;
        group_names.clear();
        while j < candidates.len() && candidates[j].start == candidates[i].start {
            let (b, c) = (&candidates[best], &candidates[j]);
            let keep = match decided_without_names(b, c) {
                Some(decided) => decided,
                // A `.dynsym` copy of the `.symtab` symbol kept, or g++'s constructor twins: the same text.
                None if same_text(b.name, c.name) => true,
                None => {
                    for name in [b.name, c.name] {
                        if !group_names.iter().any(|(n, _)| *n == name) {
                            group_names.push((name, shown(name)));
                        }
                    }
                    let text = |name: NameRef| {
                        group_names
                            .iter()
                            .find(|(n, _)| *n == name)
                            .map_or("", |(_, t)| t.as_str())
                    };
                    a_is_better(b, text(b.name), c, text(c.name))
                }
            };
            if keep {
                erased.push((candidates[j].node, candidates[j].start));
            } else {
                erased.push((candidates[best].node, candidates[best].start));
                best = j;
            }
            j += 1;
        }
        candidates.swap(kept, best);
        kept += 1;
        i = j;
    }
    kept
}

/// The chosen candidates as symbols; `nodes`: whether they stand for their nodes of perf's tree.
fn to_symbols(kept: Vec<Candidate>, nodes: bool) -> Vec<Symbol> {
    kept.into_iter()
        .map(|c| Symbol {
            start: c.start,
            end: c.span,
            raw: c.name,
            node: if nodes { c.node } else { NO_NODE },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::workloads::Build;

    #[test]
    fn workload_symbols_and_build_id() {
        for build in Build::ALL {
            let info = ElfInfo::parse(build.bytes()).unwrap();
            assert!(info.has_symtab);
            let bid = info.build_id.clone().expect("gcc emits a build-id note");
            assert_eq!(Some(bid.clone()), build_id(build.bytes()));
            let file = object::File::parse(build.bytes()).unwrap();
            use object::ObjectSymbol;
            for name in crate::perf::workloads::EXPECTED_CHAIN {
                let sym = file
                    .symbols()
                    .find(|s| s.name() == Ok(name))
                    .expect("workload symbol");
                let inside = sym.address() + sym.size() / 2;
                let found = info.lookup(inside).expect("symbol found");
                assert_eq!(&*info.symbol_name(found), name);
                assert_eq!(
                    (found.start, found.end),
                    (sym.address(), sym.address() + sym.size())
                );
                assert_eq!(
                    info.lookup(sym.address())
                        .map(|s| info.symbol_name(s).to_string())
                        .as_deref(),
                    Some(name)
                );
            }
            // GNU addr2line names the static glibc's clock_gettime alias where perf picks __clock_gettime.
            let cg = info
                .symbols
                .iter()
                .find(|s| info.raw_name(s) == "__clock_gettime")
                .unwrap();
            assert_eq!(
                info.addr2line_function(cg.start + 0x11),
                Some("clock_gettime".into())
            );
            let c = info
                .symbols
                .iter()
                .find(|s| info.raw_name(s) == "chain_c")
                .unwrap();
            assert_eq!(info.addr2line_function(c.start + 4), Some("chain_c".into()));
            // The static executable maps its text at file offset 0x1000 → svma 0x401000.
            assert_eq!(info.file_offset_to_svma(0x1000), Some(0x40_1000));
        }
    }

    /// Candidates in symbol-table order.
    fn numbered(mut v: Vec<Candidate>) -> Vec<Candidate> {
        for (i, c) in v.iter_mut().enumerate() {
            c.node = i as u32;
        }
        v
    }

    #[test]
    fn a_name_is_read_where_a_nul_ends_it_and_not_past_the_table() {
        let strings = b"\0main\0$x\0tail";
        let last = memchr::memrchr(0, strings);
        assert_eq!(name_head(strings, 1, last), Some(b'm'));
        assert_eq!(name_head(strings, 0, last), Some(0));
        assert_eq!(name_head(strings, 6, last), Some(b'$'));
        // "tail" has no NUL after it, and an offset past the table is nothing.
        assert_eq!(name_head(strings, 9, last), None);
        assert_eq!(name_head(strings, 40, last), None);
        assert_eq!(name_head(b"abc", 0, memchr::memrchr(0, b"abc")), None);
    }

    #[test]
    fn candidates_and_symbols_stay_small_and_names_round_trip() {
        // A large table's candidates and symbols are allocated, and faulted in, at the start of a run.
        assert_eq!(std::mem::size_of::<Candidate>(), 32);
        assert_eq!(std::mem::size_of::<Symbol>(), 32);
        for (at, len) in [(0, 0), (7, 3), (u32::MAX, 0x7fff_ffff)] {
            assert_eq!(NameRef::arena(at, len).get(), Name::Arena(at, len));
        }
        for (t, off) in [(0, 0), (1, 5), (1, u32::MAX)] {
            assert_eq!(NameRef::table(t, off).get(), Name::Table(t, off));
        }
        assert_ne!(NameRef::arena(5, 0), NameRef::table(0, 5));
    }

    #[test]
    fn indexed_lookup_agrees_with_a_search_of_the_whole_table() {
        // The test binary's own table: thousands of symbols, so hundreds of index entries.
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let mut info = ElfInfo::parse(&exe).unwrap();
        assert!(
            info.symbols.len() > 10 * SEARCH_STRIDE,
            "{}",
            info.symbols.len()
        );
        let probes = |info: &ElfInfo| -> Vec<u64> {
            (info.symbols.iter())
                .flat_map(|s| {
                    [
                        s.start.wrapping_sub(1),
                        s.start,
                        s.start + 1,
                        s.end - 1,
                        s.end,
                    ]
                })
                .chain([0, u64::MAX])
                .collect()
        };
        for svma in probes(&info) {
            assert_eq!(
                info.lookup_table(svma),
                ElfInfo::lookup_in(&info.symbols, svma),
                "{svma:#x}"
            );
        }
        // A table replaced after the index was made is searched whole.
        info.symbols.truncate(info.symbols.len() / 3);
        for svma in probes(&info) {
            assert_eq!(
                info.lookup_table(svma),
                ElfInfo::lookup_in(&info.symbols, svma),
                "{svma:#x}"
            );
        }
        info.symbols.clear();
        assert_eq!(info.lookup_table(0x1000), None);
    }

    #[test]
    fn radix_sort_by_start_gives_start_then_node_order() {
        // Enough candidates for the radix path (and for moving them through a copy), starts over 40 bits
        // (places sorted by their starts) and over 28 bits (sorted as packed words), with many repeats, in node
        // order.
        let sizes = [5000, LARGE_TABLE as u32 + 1000];
        for (bits, size) in [0xff_ffff_ffffu64, 0xfff_ffff]
            .into_iter()
            .flat_map(|b| sizes.map(|n| (b, n)))
        {
            let mut x = 99u64;
            let v: Vec<Candidate> = (0..size)
                .map(|node| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let start = if node % 7 == 0 {
                        0x4000
                    } else {
                        0x1000 + ((x >> 24) & bits)
                    };
                    Candidate {
                        start,
                        span: u64::from(node),
                        fixed: false,
                        node,
                        name: NameRef::arena(node, 0),
                        sized: false,
                        binding: STB_GLOBAL,
                    }
                })
                .collect();
            let mut want = v.clone();
            want.sort_unstable_by_key(|c| (c.start, c.node));
            let mut got = v;
            sort_by_start(&mut got);
            let key = |c: &Candidate| (c.start, c.node, c.span, c.name);
            assert_eq!(
                got.iter().map(key).collect::<Vec<_>>(),
                want.iter().map(key).collect::<Vec<_>>(),
                "{size} starts under {bits:#x}"
            );
        }
    }

    impl Candidate {
        /// The candidate with its name, to be interned by [`select_named`].
        fn named(self, name: &str) -> (Candidate, String) {
            (self, name.to_owned())
        }
    }

    /// [`select_symbols`] over candidates in table order, their names interned in `info`'s arena.
    fn select_named(info: &mut ElfInfo, v: Vec<(Candidate, String)>, demangle: bool) {
        let v = v
            .into_iter()
            .map(|(mut c, name)| {
                c.name = info.intern(&name);
                c
            })
            .collect();
        info.symbols = select_symbols(numbered(v), demangle, &info.names);
    }

    #[test]
    fn the_last_zero_size_alias_wins_as_its_end_was_fixed_first() {
        // perf fixes ends before it drops aliases: the last zero-size symbol at 0x60 already ends at 0x70,
        // so it beats the longer name before it; the final one runs a page past its start, rounded up.
        let c = |start, name: &str| {
            Candidate {
                start,
                span: 0,
                fixed: false,
                sized: false,
                node: 0,
                name: NameRef::arena(0, 0),
                binding: STB_GLOBAL,
            }
            .named(name)
        };
        let mut info = ElfInfo::default();
        select_named(
            &mut info,
            vec![c(0x60, "a_longer_name"), c(0x60, "b"), c(0x1070, "last")],
            false,
        );
        let got: Vec<(u64, u64, String)> = info
            .symbols
            .iter()
            .map(|s| (s.start, s.end, info.symbol_name(s).to_string()))
            .collect();
        let got: Vec<(u64, u64, &str)> = got.iter().map(|(a, b, n)| (*a, *b, n.as_str())).collect();
        assert_eq!(got, vec![(0x60, 0x1070, "b"), (0x1070, 0x3000, "last")]);
    }

    #[test]
    fn alias_choice_follows_perf() {
        let c = |start, size: u64, name: &str, binding| {
            Candidate {
                start,
                span: size,
                fixed: false,
                sized: size > 0,
                node: 0,
                name: NameRef::arena(0, 0),
                binding,
            }
            .named(name)
        };
        let mut info = ElfInfo::default();
        select_named(
            &mut info,
            vec![
                c(0x10, 0x10, "__libc_start_main_impl", STB_GLOBAL),
                c(0x10, 0x10, "__libc_start_main", STB_WEAK),
                c(0x20, 0, "label", object::elf::STB_LOCAL),
                c(0x30, 0x8, "_x", STB_GLOBAL),
                c(0x30, 0x8, "__y", STB_GLOBAL),
            ],
            false,
        );
        let got: Vec<(u64, u64, String)> = info
            .symbols
            .iter()
            .map(|s| (s.start, s.end, info.symbol_name(s).to_string()))
            .collect();
        let got: Vec<(u64, u64, &str)> = got.iter().map(|(a, b, n)| (*a, *b, n.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (0x10, 0x20, "__libc_start_main_impl"),
                (0x20, 0x30, "label"),
                (0x30, 0x38, "_x"),
            ]
        );
        // perf compares demangled names: raw, `short` has fewer leading underscores than `_ZN…`; demangled,
        // both have none and `long_name::foo` is longer.
        for (demangle, want) in [(false, "short"), (true, "long_name::foo")] {
            let mut info = ElfInfo {
                demangle,
                ..Default::default()
            };
            select_named(
                &mut info,
                vec![
                    c(0x40, 0x8, "_ZN9long_name3fooEv", STB_GLOBAL),
                    c(0x40, 0x8, "short", STB_GLOBAL),
                    c(0x50, 0x8, "_ZN4lazy4nameEv", STB_GLOBAL),
                ],
                demangle,
            );
            assert_eq!(&*info.symbol_name(&info.symbols[0]), want);
            // Not an alias: demangled on its first use only.
            assert!(!info.shown.borrow().contains_key(&info.symbols[1].raw));
            let lazy = if demangle {
                "lazy::name"
            } else {
                "_ZN4lazy4nameEv"
            };
            assert_eq!(&*info.symbol_name(&info.symbols[1]), lazy);
            assert_eq!(info.raw_name(&info.symbols[1]), "_ZN4lazy4nameEv");
        }
        // g++'s complete and base constructors share an address and demangle alike: the first is kept
        // without demangling either.
        assert!(same_demangled_text(b"_ZN3FooC2Ev", b"_ZN3FooC1Ev"));
        assert!(!same_demangled_text(b"_ZN3FooIvE1fEv", b"_ZN3FooIiE1fEv"));
        let mut info = ElfInfo {
            demangle: true,
            ..Default::default()
        };
        select_named(
            &mut info,
            vec![
                c(0x60, 0x8, "_ZN3FooC2Ev", STB_GLOBAL),
                c(0x60, 0x8, "_ZN3FooC1Ev", STB_GLOBAL),
            ],
            true,
        );
        assert!(!info.shown.borrow().contains_key(&info.symbols[0].raw));
        assert_eq!(info.raw_name(&info.symbols[0]), "_ZN3FooC2Ev");
        assert_eq!(&*info.symbol_name(&info.symbols[0]), "Foo::Foo");
    }

    #[test]
    fn a_mapping_whose_page_two_segments_share_starts_at_the_later_segment() {
        // The PT_LOADs of a Rust binary linked by lld here (rustc 1.9x, `readelf -l`): the text segment starts in
        // the read-only segment's last file page. Its mapping (r-x, pgoff 0x13000) is the text segment's, so the
        // mapping's first byte is svma 0x14000; taking the first segment holding offset 0x13000 gave 0x13000,
        // and DWARF unwinding then looked up every address 0x1000 too low (the chain ended in garbage at the
        // first frame whose CFI that missed).
        let info = ElfInfo {
            segments: vec![
                Segment {
                    offset: 0,
                    file_size: 0x13d14,
                    vaddr: 0,
                },
                Segment {
                    offset: 0x13d20,
                    file_size: 0x3f5f0,
                    vaddr: 0x14d20,
                },
                Segment {
                    offset: 0x53310,
                    file_size: 0x29c0,
                    vaddr: 0x55310,
                },
            ],
            ..ElfInfo::default()
        };
        assert_eq!(info.mapping_start_svma(0), Some(0));
        assert_eq!(info.mapping_start_svma(0x13000), Some(0x14000));
        assert_eq!(info.mapping_start_svma(0x53000), Some(0x55000));
        // A byte's own offset is unambiguous.
        assert_eq!(info.file_offset_to_svma(0x14d93), Some(0x15d93));
        // A mapping that starts inside a segment (no segment begins on its page).
        assert_eq!(info.mapping_start_svma(0x20000), Some(0x21000));
    }
}
