//! The DWARF of one binary, asked the questions `perf probe` asks (tools/perf/util/probe-finder.c and
//! dwarf-aux.c): where a function and its inlined instances are, which line-table rows belong to a line, which
//! variables are in scope at an address, and how to fetch them there (see `location`).
//!
//! The file is mapped, not read, and a unit is indexed (its DIEs by tag, offset and parent; its line rows) only
//! when a question reaches it: a 100 MB Rust debug binary has ~800 units and millions of DIEs of which a probe
//! needs a handful. Finding a function still visits every unit, as perf's CU walk does, but by skipping the
//! attributes of every DIE that cannot name it.

use super::Error;
use crate::perf::data::map::{FileMap, SharedBytes};
use gimli::Reader as _;
use gimli::{AttributeValue, RunTimeEndian, UnitOffset};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

pub(crate) type R = gimli::EndianReader<RunTimeEndian, SharedBytes>;

/// One DIE of the index.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Die {
    pub offset: UnitOffset,
    pub tag: gimli::DwTag,
    pub parent: Option<usize>,
}

/// A unit; its DIE index and line rows are built on first use.
pub(crate) struct UnitInfo {
    pub unit: gimli::Unit<R>,
    dies: OnceCell<Vec<Die>>,
    /// Line rows sorted by address as libdw sorts them (stable; an end of sequence before a row at its address).
    rows: OnceCell<Vec<Row>>,
    /// The unit's compilation directory, joined to relative file names.
    pub comp_dir: Option<String>,
    /// Whether a variable has a location list (computed on first use).
    pub optimized: OnceCell<bool>,
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

const FUNCTION_TAGS: [gimli::DwTag; 2] =
    [gimli::DW_TAG_subprogram, gimli::DW_TAG_inlined_subroutine];

/// The three attributes that can name a DIE (DW_AT_name, DW_AT_abstract_origin, DW_AT_specification), read
/// from the attributes of the entry `raw` is at; the others are skipped, runs of them in one call. `None` when
/// the data is damaged.
fn naming_attributes(
    raw: &mut gimli::EntriesRaw<'_, R>,
    specs: &[gimli::AttributeSpecification],
) -> Option<[Option<AttributeValue<R>>; 3]> {
    let (mut own, mut origin, mut spec) = (None, None, None);
    let mut run = 0;
    for (k, at) in specs.iter().enumerate() {
        let slot = match at.name() {
            gimli::DW_AT_name => &mut own,
            gimli::DW_AT_abstract_origin => &mut origin,
            gimli::DW_AT_specification => &mut spec,
            _ => continue,
        };
        raw.skip_attributes(&specs[run..k]).ok()?;
        run = k + 1;
        *slot = Some(raw.read_attribute(*at).ok()?.value());
    }
    raw.skip_attributes(&specs[run..]).ok()?;
    Some([own, origin, spec])
}

/// A name to look for, with every .debug_str offset at which it is a whole string. Comparing a DW_FORM_strp
/// offset against these is what keeps the walk over every unit off .debug_str (tens of MB the walk would
/// otherwise touch at random); tail-merged strings (`open` inside `do_open`) are found too.
pub(crate) struct NameKey<'a> {
    name: &'a str,
    str_offsets: Vec<usize>,
}

impl NameKey<'_> {
    /// The DIEs of `unit` with a tag in `tags` (children of the unit DIE only when `top_level`) whose name, their
    /// own or through DW_AT_abstract_origin / DW_AT_specification as `name()` follows it, is `name`. This is the
    /// walk that visits every unit, so it reads only the three attributes that can name a DIE and skips the
    /// rest, and resolves an inlined copy's origin against the subprograms the same walk saw (an -O1 C++ unit
    /// has thousands of inlined copies of a few hundred functions) instead of reading the origin again.
    fn find_in(
        &self,
        dwarf: &gimli::Dwarf<R>,
        u: &gimli::Unit<R>,
        tags: &[gimli::DwTag],
        top_level: bool,
        scratch: &mut Scratch,
    ) -> Vec<UnitOffset> {
        scratch.wanted.clear();
        scratch.subprograms.clear();
        scratch.all.clear();
        self.walk(dwarf, u, tags, top_level, scratch);
        self.named_wanted(dwarf, u, scratch)
    }

    /// The walk over `u`'s DIEs: every DIE into `scratch.all`, the wanted ones and every subprogram with whether
    /// their own name is `self` and their origin.
    fn walk(
        &self,
        dwarf: &gimli::Dwarf<R>,
        u: &gimli::Unit<R>,
        tags: &[gimli::DwTag],
        top_level: bool,
        scratch: &mut Scratch,
    ) {
        let Ok(mut raw) = u.entries_raw(None) else {
            return;
        };
        while !raw.is_empty() {
            let offset = raw.next_offset();
            let depth = raw.next_depth();
            let abbrev = match raw.read_abbreviation() {
                Ok(Some(a)) => a,
                Ok(None) => continue,
                Err(_) => break,
            };
            let tag = abbrev.tag();
            scratch.all.push((offset, tag, depth));
            let want = tags.contains(&tag) && (!top_level || depth == 1);
            let specs = abbrev.attributes();
            if !want && tag != gimli::DW_TAG_subprogram {
                if raw.skip_attributes(specs).is_err() {
                    break;
                }
                continue;
            }
            let Some([own, origin, spec]) = naming_attributes(&mut raw, specs) else {
                break;
            };
            let own = own.map(|v| self.is(dwarf, u, v));
            let origin = match origin.or(spec) {
                Some(AttributeValue::UnitRef(o)) => Some(o),
                _ => None,
            };
            if tag == gimli::DW_TAG_subprogram {
                scratch.subprograms.push((offset, own, origin));
            }
            if want {
                scratch.wanted.push((offset, own, origin));
            }
        }
    }

    /// The wanted DIEs the walk collected that are named `self`, their own name or their origin's: each
    /// subprogram's origin chain followed once (`scratch.matched` keeps the answers).
    fn named_wanted(
        &self,
        dwarf: &gimli::Dwarf<R>,
        u: &gimli::Unit<R>,
        scratch: &mut Scratch,
    ) -> Vec<UnitOffset> {
        let Scratch {
            wanted,
            subprograms,
            matched,
            ..
        } = scratch;
        // Whether each subprogram is named `name`, its origin chain followed once (None: not known yet).
        matched.clear();
        matched.resize(subprograms.len(), None);
        let mut memo: HashMap<UnitOffset, bool> = HashMap::new();
        let mut resolve = |own: Option<bool>, origin: Option<UnitOffset>| -> bool {
            let (mut own, mut origin) = (own, origin);
            let mut chain: Vec<usize> = Vec::new();
            let mut result = false;
            for _ in 0..8 {
                if let Some(m) = own {
                    result = m;
                    break;
                }
                let Some(o) = origin else {
                    break;
                };
                // Subprograms were pushed in offset order.
                match subprograms.binary_search_by_key(&o, |s| s.0) {
                    Ok(k) => {
                        if let Some(m) = matched[k] {
                            result = m;
                            break;
                        }
                        chain.push(k);
                        (own, origin) = (subprograms[k].1, subprograms[k].2);
                    }
                    Err(_) => {
                        result = self.origin_named(dwarf, u, o, &mut memo);
                        break;
                    }
                }
            }
            for k in chain {
                matched[k] = Some(result);
            }
            result
        };
        wanted
            .iter()
            .filter(|&&(_, own, origin)| resolve(own, origin))
            .map(|w| w.0)
            .collect()
    }

    fn is(&self, dwarf: &gimli::Dwarf<R>, unit: &gimli::Unit<R>, v: AttributeValue<R>) -> bool {
        let key = self;
        match v {
            AttributeValue::DebugStrRef(o) => key.str_offsets.binary_search(&o.0).is_ok(),
            AttributeValue::DebugStrOffsetsIndex(i) => dwarf
                .string_offset(unit, i)
                .is_ok_and(|o| key.str_offsets.binary_search(&o.0).is_ok()),
            v => dwarf.attr_string(unit, v).is_ok_and(|r| {
                r.len() == key.name.len() && r.to_slice().is_ok_and(|b| *b == *key.name.as_bytes())
            }),
        }
    }

    /// Whether the DIE at `offset` (an abstract origin or a declaration) is named `name`, following its own
    /// origin chain as far as `origin_attr` does.
    fn origin_named(
        &self,
        dwarf: &gimli::Dwarf<R>,
        unit: &gimli::Unit<R>,
        offset: UnitOffset,
        memo: &mut HashMap<UnitOffset, bool>,
    ) -> bool {
        if let Some(&m) = memo.get(&offset) {
            return m;
        }
        let mut at = offset;
        let mut result = false;
        for _ in 0..7 {
            let Ok(e) = unit.entry(at) else {
                break;
            };
            if let Some(v) = e.attr_value(gimli::DW_AT_name) {
                result = self.is(dwarf, unit, v);
                break;
            }
            match e
                .attr_value(gimli::DW_AT_abstract_origin)
                .or_else(|| e.attr_value(gimli::DW_AT_specification))
            {
                Some(AttributeValue::UnitRef(o)) => at = o,
                _ => break,
            }
        }
        memo.insert(offset, result);
        result
    }
}

/// Buffers of `NameKey::find_in`, kept over the walk of every unit so that each unit does not allocate them anew.
#[derive(Default)]
pub(crate) struct Scratch {
    /// (offset, own name matches, origin) of each DIE with a wanted tag.
    wanted: Vec<(UnitOffset, Option<bool>, Option<UnitOffset>)>,
    /// The same of every subprogram, in offset order: the origins inlined copies and definitions name.
    subprograms: Vec<(UnitOffset, Option<bool>, Option<UnitOffset>)>,
    matched: Vec<Option<bool>>,
    /// (offset, tag, depth) of every DIE walked: the unit's index when it holds a match, without a second walk.
    all: Vec<(UnitOffset, gimli::DwTag, isize)>,
}

/// The binary's DWARF and what the translation needs besides it.
pub struct DebugInfo {
    pub(crate) path: PathBuf,
    pub(crate) dwarf: gimli::Dwarf<R>,
    units: Vec<UnitInfo>,
    pub(crate) eh_frame: Option<(gimli::EhFrame<R>, gimli::BaseAddresses)>,
    pub(crate) debug_frame: Option<gimli::DebugFrame<R>>,
    pub(crate) segments: Vec<Segment>,
    /// The binary's bytes, for its symbol table.
    elf: SharedBytes,
    /// Function and object symbols (for `-F`), read on first use.
    symbols: OnceCell<Vec<String>>,
}

/// The file's bytes: mapped, or read where the file system can't map it.
pub(crate) fn file_bytes(path: &Path) -> Result<SharedBytes, Error> {
    let read_err = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    match FileMap::map(&file) {
        Ok(map) => Ok(SharedBytes::Map(Arc::new(map))),
        Err(_) => Ok(SharedBytes::Owned(Arc::from(
            std::fs::read(path).map_err(read_err)?,
        ))),
    }
}

fn empty_reader(endian: RunTimeEndian) -> R {
    gimli::EndianReader::new(SharedBytes::Owned(Arc::from(&[][..])), endian)
}

/// A section's bytes as a reader over the file (no copy), or over its decompressed bytes.
fn section_reader(
    file: &object::File,
    bytes: &SharedBytes,
    name: &str,
    endian: RunTimeEndian,
) -> Option<R> {
    let s = file.section_by_name(name)?;
    let compressed = s
        .compressed_file_range()
        .is_ok_and(|r| r.format != object::CompressionFormat::None);
    if !compressed {
        if let Some((offset, size)) = s.file_range() {
            let start = usize::try_from(offset).ok()?;
            let end = start.checked_add(usize::try_from(size).ok()?)?;
            if end <= bytes.len() {
                return Some(gimli::EndianReader::new(bytes.clone(), endian).range(start..end));
            }
            return None;
        }
    }
    let data = s.uncompressed_data().ok()?;
    Some(gimli::EndianReader::new(
        SharedBytes::Owned(Arc::from(&*data)),
        endian,
    ))
}

fn load_dwarf(
    file: &object::File,
    bytes: &SharedBytes,
    endian: RunTimeEndian,
) -> Result<gimli::Dwarf<R>, gimli::Error> {
    gimli::Dwarf::load(|id: gimli::SectionId| -> Result<R, gimli::Error> {
        Ok(section_reader(file, bytes, id.name(), endian).unwrap_or_else(|| empty_reader(endian)))
    })
}

fn has_dwarf(file: &object::File) -> bool {
    file.section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0)
}

/// The separate debug files that may hold `binary`'s DWARF, in the order they are tried: the distributions'
/// (perf's `distro_dwarf_types`: `/usr/lib/debug/PATH.debug`, `/usr/lib/debug/PATH`, `DIR/.debug/NAME`,
/// `/usr/lib/debug/.build-id/xx/yyyy.debug`), the `.gnu_debuglink` target where libdw looks for it (`DIR/LINK`,
/// `DIR/.debug/LINK`, `/usr/lib/debug/DIR/LINK`), then the build-id cache (`~/.debug/.build-id/xx/yyyy/debug`
/// and `elf`, as `bport archive` and `perf buildid-cache` lay it out), which perf 6.1 does not read for DWARF.
fn debug_file_candidates(binary: &Path, file: &object::File) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dir = binary.parent().unwrap_or(Path::new("/"));
    let rel_dir = dir.strip_prefix("/").unwrap_or(dir);
    let rel = binary.strip_prefix("/").unwrap_or(binary);
    let usr_debug = Path::new("/usr/lib/debug");
    let mut fedora = usr_debug.join(rel).into_os_string();
    fedora.push(".debug");
    out.push(PathBuf::from(fedora));
    out.push(usr_debug.join(rel));
    if let Some(name) = binary.file_name() {
        out.push(dir.join(".debug").join(name));
    }
    let hex = file
        .build_id()
        .ok()
        .flatten()
        .filter(|id| id.len() >= 2)
        .map(|id| id.iter().map(|b| format!("{b:02x}")).collect::<String>());
    if let Some(hex) = &hex {
        out.push(PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &hex[..2],
            &hex[2..]
        )));
    }
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        let name = String::from_utf8_lossy(name).into_owned();
        out.push(dir.join(&name));
        out.push(dir.join(".debug").join(&name));
        out.push(usr_debug.join(rel_dir).join(&name));
    }
    if let (Some(hex), Some(home)) = (&hex, std::env::var_os("HOME")) {
        let link = Path::new(&home)
            .join(".debug/.build-id")
            .join(&hex[..2])
            .join(&hex[2..]);
        out.push(link.join("debug"));
        out.push(link.join("elf"));
    }
    // The binary itself is never its own debug file (a debuglink naming the binary's own name in its directory).
    out.retain(|p| p != binary);
    out
}

/// The first candidate debug file with DWARF and, when both carry one, the binary's build-id (the debuglink CRC
/// is not checked: the build-id is).
fn separate_debug_file(binary: &Path, file: &object::File) -> Option<(PathBuf, SharedBytes)> {
    let want = file.build_id().ok().flatten().map(<[u8]>::to_vec);
    for cand in debug_file_candidates(binary, file) {
        if !cand.is_file() {
            continue;
        }
        let Ok(bytes) = file_bytes(&cand) else {
            continue;
        };
        let Ok(debug) = object::File::parse(&*bytes) else {
            continue;
        };
        let id = debug.build_id().ok().flatten().map(<[u8]>::to_vec);
        if want.is_some() && id.is_some() && id != want {
            continue;
        }
        if has_dwarf(&debug) {
            return Some((cand, bytes.clone()));
        }
    }
    None
}

impl DebugInfo {
    /// Reads `path` and its DWARF (or its build-id debug file's).
    pub fn open(path: &Path) -> Result<DebugInfo, Error> {
        let bytes = file_bytes(path)?;
        let file = object::File::parse(&*bytes).map_err(|e| Error::NotElf {
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
        let eh_frame = file.section_by_name(".eh_frame").and_then(|sec| {
            let r = section_reader(&file, &bytes, ".eh_frame", endian)?;
            let mut bases = gimli::BaseAddresses::default().set_eh_frame(sec.address());
            if let Some(text) = file.section_by_name(".text") {
                bases = bases.set_text(text.address());
            }
            Some((gimli::EhFrame::from(r), bases))
        });
        let debug_frame =
            section_reader(&file, &bytes, ".debug_frame", endian).map(gimli::DebugFrame::from);

        let dwarf = if has_dwarf(&file) {
            load_dwarf(&file, &bytes, endian)
        } else if let Some((debug_path, debug_bytes)) = separate_debug_file(path, &file) {
            let debug_file = object::File::parse(&*debug_bytes).map_err(|e| Error::NotElf {
                path: debug_path.clone(),
                reason: e.to_string(),
            })?;
            load_dwarf(&debug_file, &debug_bytes, endian)
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
        drop(file);

        let mut units = Vec::new();
        let mut headers = dwarf.units();
        let dwarf_err = |e: gimli::Error| Error::Dwarf {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        while let Some(header) = headers.next().map_err(dwarf_err)? {
            let unit = dwarf.unit(header).map_err(dwarf_err)?;
            let comp_dir = match &unit.comp_dir {
                Some(d) => Some(d.to_string_lossy().map_err(dwarf_err)?.into_owned()),
                None => None,
            };
            units.push(UnitInfo {
                unit,
                dies: OnceCell::new(),
                rows: OnceCell::new(),
                comp_dir,
                optimized: OnceCell::new(),
            });
        }
        Ok(DebugInfo {
            path: path.to_path_buf(),
            dwarf,
            units,
            eh_frame,
            debug_frame,
            segments,
            elf: bytes,
            symbols: OnceCell::new(),
        })
    }

    /// How many units the DWARF has.
    pub(crate) fn unit_count(&self) -> usize {
        self.units.len()
    }

    /// The gimli unit.
    pub(crate) fn unit(&self, unit: usize) -> &gimli::Unit<R> {
        &self.units[unit].unit
    }

    /// The unit's DIEs in DFS order (index 0 is the unit DIE). A unit that stops parsing keeps the DIEs before
    /// the damage: what perf's libdw walk would also have seen.
    pub(crate) fn dies(&self, unit: usize) -> &[Die] {
        let u = &self.units[unit];
        u.dies.get_or_init(|| index_dies(&u.unit))
    }

    /// The unit's line rows (sorted by address), those before any damage in its line program.
    pub(crate) fn rows(&self, unit: usize) -> &[Row] {
        let u = &self.units[unit];
        u.rows
            .get_or_init(|| line_rows(&self.dwarf, &u.unit, u.comp_dir.as_deref()))
    }

    /// Function and object symbols of the binary, .symtab's then .dynsym's, in table order, one per entry (perf
    /// keeps functions, objects and labels: visible NOTYPE symbols in text or data sections).
    pub(crate) fn symbols(&self) -> &[String] {
        self.symbols.get_or_init(|| {
            let Ok(file) = object::File::parse(&*self.elf) else {
                return Vec::new();
            };
            // perf reads the dynamic symbol table as well as the static one and lists both, duplicates
            // included: a copy-relocated `stdout` is in .dynsym under its plain name, `stdout@GLIBC_2.2.5` in
            // .symtab.
            let symbols: Vec<String> = file
                .symbols()
                .chain(file.dynamic_symbols())
                .filter(|s| {
                    let object::SymbolSection::Section(index) = s.section() else {
                        return false;
                    };
                    match s.kind() {
                        object::SymbolKind::Text | object::SymbolKind::Data => true,
                        // perf's labels (elf_sym__is_label): not hidden or internal, and only in a section
                        // named like text or data (elf_sec__filter): data_start is one, the GCC_except_table
                        // labels and zstd's hidden asm-loop labels are not.
                        object::SymbolKind::Unknown => {
                            let visible = match s.flags() {
                                object::SymbolFlags::Elf { st_other, .. } => !matches!(
                                    st_other.visibility(),
                                    object::elf::STV_HIDDEN | object::elf::STV_INTERNAL
                                ),
                                _ => true,
                            };
                            visible
                                && file.section_by_index(index).is_ok_and(|sec| {
                                    sec.name()
                                        .is_ok_and(|n| n.contains("text") || n.contains("data"))
                                })
                        }
                        _ => false,
                    }
                })
                .filter_map(|s| s.name().ok().map(String::from))
                .collect();
            symbols
        })
    }

    /// Whether the unit's line program names a file that `file` is a tail of (perf's `cu_find_realpath`), read
    /// from its header alone.
    pub(crate) fn unit_mentions_file(&self, unit: usize, file: &str) -> bool {
        let u = &self.units[unit];
        let Some(program) = u.unit.line_program.as_ref() else {
            return false;
        };
        let header = program.header();
        header.file_names().iter().any(|fe| {
            file_path(&self.dwarf, &u.unit, header, fe, u.comp_dir.as_deref())
                .is_some_and(|p| tail_matches(&p, file))
        })
    }

    /// The children of the unit DIE with tag `tag` named `name`, as DIE indices (only a unit that has one gets
    /// indexed).
    pub(crate) fn top_level_named(
        &self,
        unit: usize,
        tag: gimli::DwTag,
        name: &NameKey,
    ) -> Vec<usize> {
        name.find_in(
            &self.dwarf,
            &self.units[unit].unit,
            &[tag],
            true,
            &mut Scratch::default(),
        )
        .into_iter()
        .filter_map(|o| self.die_index(unit, o))
        .collect()
    }

    pub(crate) fn name_key<'a>(&self, name: &'a str) -> NameKey<'a> {
        let mut needle = name.as_bytes().to_vec();
        needle.push(0);
        use gimli::Section as _;
        let strings = self.dwarf.debug_str.reader();
        let str_offsets = match strings.to_slice() {
            Ok(bytes) => memchr::memmem::find_iter(&bytes, &needle).collect(),
            Err(_) => Vec::new(),
        };
        NameKey { name, str_offsets }
    }

    /// The units whose .debug_aranges cover `addr` (none when the binary has no aranges).
    fn units_by_aranges(&self, addr: u64) -> Vec<usize> {
        let mut out = Vec::new();
        let mut headers = self.dwarf.debug_aranges.headers();
        while let Ok(Some(h)) = headers.next() {
            let mut entries = h.entries();
            let mut covers = false;
            while let Ok(Some(e)) = entries.next() {
                let r = e.range();
                if addr >= r.begin && addr < r.end {
                    covers = true;
                    break;
                }
            }
            if !covers {
                continue;
            }
            let target = h.debug_info_offset();
            if let Some(u) = self
                .units
                .iter()
                .position(|u| u.unit.header.debug_info_offset() == Some(target))
            {
                out.push(u);
            }
        }
        out
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
        self.units[unit]
            .unit
            .entry(self.dies(unit)[die].offset)
            .expect("an indexed DIE reads back")
    }

    pub(crate) fn die_index(&self, unit: usize, offset: UnitOffset) -> Option<usize> {
        self.dies(unit)
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
        let dies = self.dies(unit);
        ((die + 1)..dies.len())
            .take_while(move |&i| self.is_descendant(unit, i, die))
            .filter(move |&i| dies[i].parent == Some(die))
    }

    fn is_descendant(&self, unit: usize, mut i: usize, ancestor: usize) -> bool {
        let dies = self.dies(unit);
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
        let key = self.name_key(name);
        self.instances_in(self.walk_units(&FUNCTION_TAGS, &key, false), file)
    }

    /// The first out-of-line body of `name` in unit order (what perf's -L shows, it stops at the first unit
    /// that has one): the walk stops claiming units past the first one where a subprogram is named `name`, and
    /// walks them all only when that subprogram turns out to have no code (a declaration).
    pub(crate) fn first_body(&self, name: &str) -> Option<Instance> {
        let key = self.name_key(name);
        self.instances_in(self.walk_units(&FUNCTION_TAGS, &key, true), None)
            .into_iter()
            .find(|i| !i.inlined)
            .or_else(|| self.instances(name, None).into_iter().find(|i| !i.inlined))
    }

    fn instances_in(
        &self,
        walked: Vec<(usize, Vec<UnitOffset>)>,
        file: Option<&str>,
    ) -> Vec<Instance> {
        let mut out = Vec::new();
        for (ui, found) in walked {
            for offset in found {
                let Some(di) = self.die_index(ui, offset) else {
                    continue;
                };
                let inlined = self.dies(ui)[di].tag == gimli::DW_TAG_inlined_subroutine;
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

    /// The DIEs of every unit tagged `tags` and named by `key`, per unit in unit order (units without one left
    /// out), the units of a match indexed on the way. The units are independent, so the walk runs on as many
    /// threads as the machine offers (up to 4): it is most of a probe's time on a big binary.
    /// With `first`, units past the first with a matching subprogram are not walked.
    fn walk_units(
        &self,
        tags: &[gimli::DwTag],
        key: &NameKey,
        first: bool,
    ) -> Vec<(usize, Vec<UnitOffset>)> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let n = self.units.len();
        let indexed: Vec<bool> = self.units.iter().map(|u| u.dies.get().is_some()).collect();
        let units: Vec<&gimli::Unit<R>> = self.units.iter().map(|u| &u.unit).collect();
        let dwarf = &self.dwarf;
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .clamp(1, 4)
            .min(n.max(1));
        let next = AtomicUsize::new(0);
        // Units are claimed in increasing order, so every unit below the first match is walked whole.
        let stop = AtomicUsize::new(usize::MAX);
        let work = || {
            let mut scratch = Scratch::default();
            let mut out = Vec::new();
            loop {
                let u = next.fetch_add(1, Ordering::Relaxed);
                if u >= n || u > stop.load(Ordering::Relaxed) {
                    break;
                }
                let found = key.find_in(dwarf, units[u], tags, false, &mut scratch);
                if first
                    && found.iter().any(|o| {
                        scratch
                            .all
                            .binary_search_by_key(o, |d| d.0)
                            .is_ok_and(|k| scratch.all[k].1 == gimli::DW_TAG_subprogram)
                    })
                {
                    stop.fetch_min(u, Ordering::Relaxed);
                }
                if !found.is_empty() {
                    let dies = (!indexed[u]).then(|| dies_from(&scratch.all));
                    out.push((u, found, dies));
                }
            }
            out
        };
        let mut results: Vec<(usize, Vec<UnitOffset>, Option<Vec<Die>>)> =
            std::thread::scope(|s| {
                // Units are claimed from a shared counter: a helper the system refuses only leaves more to the
                // others (`Scope::spawn` would panic instead).
                let helpers: Vec<_> = (1..threads)
                    .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
                    .collect();
                let mut all = work();
                for h in helpers {
                    match h.join() {
                        Ok(part) => all.extend(part),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                all
            });
        results.sort_by_key(|r| r.0);
        let stop = stop.into_inner();
        results
            .into_iter()
            .filter(|r| r.0 <= stop)
            .map(|(u, found, dies)| {
                if let Some(d) = dies {
                    // Set here: the cell is not shared with the walking threads.
                    let _ = self.units[u].dies.set(d);
                }
                (u, found)
            })
            .collect()
    }

    /// The out-of-line function (DW_TAG_subprogram with code) of a unit containing `addr`.
    pub(crate) fn real_function_at(&self, unit: usize, addr: u64) -> Option<usize> {
        let dies = self.dies(unit);
        (0..dies.len())
            .find(|&di| dies[di].tag == gimli::DW_TAG_subprogram && self.contains(unit, di, addr))
    }

    /// The unit whose code holds `addr`: the first unit with a function there, asking the units .debug_aranges
    /// names first so that the others are not indexed.
    pub(crate) fn unit_at(&self, addr: u64) -> Option<usize> {
        let mut candidates = self.units_by_aranges(addr);
        candidates.sort_unstable();
        candidates
            .into_iter()
            .find(|&ui| self.real_function_at(ui, addr).is_some())
            .or_else(|| (0..self.units.len()).find(|&ui| self.real_function_at(ui, addr).is_some()))
    }

    /// Scopes containing `addr`, from `function` inwards (lexical blocks and inlined copies; a block without
    /// ranges is taken as covering its parent).
    pub(crate) fn scopes_at(&self, unit: usize, function: usize, addr: u64) -> Vec<usize> {
        let mut chain = vec![function];
        let mut cur = function;
        'down: loop {
            for c in self.children(unit, cur).collect::<Vec<_>>() {
                let tag = self.dies(unit)[c].tag;
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
        let rows = self.rows(unit);
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
        let rows = self.rows(unit);
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
            self.dies(unit).iter().any(|d| {
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

/// The DIE index of a unit: offsets, tags and parents, attributes skipped.
fn index_dies(unit: &gimli::Unit<R>) -> Vec<Die> {
    let mut all = Vec::new();
    if let Ok(mut raw) = unit.entries_raw(None) {
        while !raw.is_empty() {
            let offset = raw.next_offset();
            let depth = raw.next_depth();
            let abbrev = match raw.read_abbreviation() {
                Ok(Some(a)) => a,
                // A null entry closes a list of children; the reader tracks the depth.
                Ok(None) => continue,
                Err(_) => break,
            };
            all.push((offset, abbrev.tag(), depth));
            if raw.skip_attributes(abbrev.attributes()).is_err() {
                break;
            }
        }
    }
    dies_from(&all)
}

/// The index from (offset, tag, depth) in DFS order: a DIE's parent is the last DIE one level up.
fn dies_from(all: &[(UnitOffset, gimli::DwTag, isize)]) -> Vec<Die> {
    let mut dies = Vec::with_capacity(all.len());
    let mut stack: Vec<usize> = Vec::new();
    for &(offset, tag, depth) in all {
        let Ok(level) = usize::try_from(depth) else {
            break;
        };
        stack.truncate(level);
        dies.push(Die {
            offset,
            tag,
            parent: stack.last().copied(),
        });
        stack.push(dies.len() - 1);
    }
    dies
}

/// The line rows of a unit, sorted by address as libdw sorts them.
fn line_rows(dwarf: &gimli::Dwarf<R>, unit: &gimli::Unit<R>, comp_dir: Option<&str>) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut files: HashMap<u64, Rc<str>> = HashMap::new();
    if let Some(program) = unit.line_program.clone() {
        let mut it = program.rows();
        let mut index = 0usize;
        while let Ok(Some((header, row))) = it.next_row() {
            let file = files
                .entry(row.file_index())
                .or_insert_with(|| {
                    Rc::from(
                        row.file(header)
                            .and_then(|fe| file_path(dwarf, unit, header, fe, comp_dir))
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
    rows.into_iter().map(|(_, r)| r).collect()
}
