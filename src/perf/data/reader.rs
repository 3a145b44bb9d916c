//! Reading perf.data: file mode (`perf_file_header`, attrs, data, feature sections) and pipe mode (a 16-byte
//! header, then attrs and features as records), both byte orders, records in time order as perf delivers them.
//!
//! ```text
//! file mode                              pipe mode
//! 0    perf_file_header (104; 72 legacy)  0   { magic, size = 16 }
//!      attrs: { attr (attr.size), ids }    16  HEADER_ATTR, HEADER_FEATURE, … records
//!      data: records                           kernel records, FINISHED_ROUND, HEADER_BUILD_ID, …
//!      feature table at data.offset+size
//!      feature payloads
//! ```
//!
//! Time order (tools/perf/util/ordered-events.c): records with a timestamp are queued; at each FINISHED_ROUND the
//! queue is flushed up to the largest timestamp seen before the *previous* round, because a CPU's buffer may still
//! hold older events that arrive in the next pass. Records without a timestamp pass straight through, and the end
//! of the data flushes everything.

use super::attr::PerfEventAttr;
use super::cursor::{align8, Cursor};
use super::features::{parse_build_id, Features};
use super::iter::Records;
use super::prefetch;
use super::records::{self, Record, RecordMeta};
use super::sample::SampleLayout;
use super::{ReadError, Warning};
use crate::perf::abi::*;
use object::endian::{BigEndian, Endian, Endianness, LittleEndian};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// One event (attr) of the file with its ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttrEntry {
    /// The attr as the file states it.
    pub attr: PerfEventAttr,
    /// The ids of the kernel events opened for it (one per CPU or thread).
    pub ids: Vec<u64>,
    /// Its name from EVENT_DESC, if the file has one.
    pub name: Option<String>,
}

enum Backing {
    // Shared with the page prefetcher (see `prefetch`), which keeps the map alive while it runs.
    Map(std::sync::Arc<memmap2::Mmap>),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Backing {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

/// A perf.data file (or pipe-mode stream), parsed up to the records; records are parsed as they are iterated.
pub struct PerfFile {
    bytes: Backing,
    pub(super) endian: Endianness,
    pipe: bool,
    header_size: u64,
    pub(super) data_start: usize,
    data_end: usize,
    attrs: Vec<AttrEntry>,
    layouts: Vec<SampleLayout>,
    id_to_attr: HashMap<u64, usize>,
    sample_id_pos: Option<usize>,
    trailer_id_pos: Option<usize>,
    features: Features,
    feature_ids: Vec<u32>,
    warnings: Vec<Warning>,
    /// The records of every COMPRESSED record, decoded when an iterator first meets one (files without them,
    /// the common case, are not scanned for them: that scan touched every page of a large file before the
    /// first record was read).
    decompressed: std::cell::OnceCell<super::compressed::Decompressed>,
    /// Pages of the data section are faulted in ahead of the reader by another thread, started by the first
    /// iterator (see [`prefetch`]).
    prefetch: std::cell::OnceCell<Option<prefetch::Prefetch>>,
}

impl std::fmt::Debug for PerfFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfFile")
            .field("len", &self.bytes.len())
            .field("endian", &self.endian)
            .field("pipe", &self.pipe)
            .field("attrs", &self.attrs)
            .finish_non_exhaustive()
    }
}

/// A record's header, its body and where the next record starts.
pub(super) struct RawRec<'a> {
    pub(super) ty: u32,
    pub(super) misc: u16,
    pub(super) body: &'a [u8],
    pub(super) next: usize,
}

impl PerfFile {
    /// Opens and maps `path` (a regular file; other kinds are read into memory).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReadError> {
        let path = path.as_ref();
        let io = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_file() {
            if meta.len() == 0 {
                return Err(ReadError::Empty);
            }
            let map = map_file(&file).map_err(io)?;
            return Self::parse(Backing::Map(std::sync::Arc::new(map)));
        }
        let mut v = Vec::new();
        let mut f = file;
        f.read_to_end(&mut v).map_err(io)?;
        Self::parse(Backing::Owned(v))
    }

    /// Parses a whole file or stream held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, ReadError> {
        Self::parse(Backing::Owned(bytes))
    }

    /// Reads a stream to its end (e.g. `perf record -o - | bport …`) and parses it; file mode works too.
    pub fn from_reader(mut reader: impl Read) -> Result<Self, ReadError> {
        let mut v = Vec::new();
        reader.read_to_end(&mut v).map_err(|source| ReadError::Io {
            path: "<stream>".into(),
            source,
        })?;
        Self::from_bytes(v)
    }

    fn parse(bytes: Backing) -> Result<Self, ReadError> {
        if bytes.is_empty() {
            return Err(ReadError::Empty);
        }
        if bytes.len() < 16 {
            return Err(ReadError::Truncated {
                what: "perf.data header",
                offset: 0,
                needed: 16,
                available: bytes.len() as u64,
            });
        }
        let magic: [u8; 8] = bytes[0..8].try_into().expect("16 bytes checked");
        let endian = match &magic {
            b"PERFILE2" => Endianness::Little,
            b"2ELIFREP" => Endianness::Big,
            // Legacy v1 files (perf before 3.4) have no byte-order mark; the attr entry size tells
            // (`try_all_file_abis`).
            b"PERFFILE" => legacy_endian(&bytes)?,
            _ => {
                return Err(ReadError::BadMagic {
                    found: String::from_utf8_lossy(&magic).into_owned(),
                })
            }
        };
        let mut file = PerfFile {
            bytes,
            endian,
            pipe: false,
            header_size: 0,
            data_start: 0,
            data_end: 0,
            attrs: Vec::new(),
            layouts: Vec::new(),
            id_to_attr: HashMap::new(),
            sample_id_pos: None,
            trailer_id_pos: None,
            features: Features::default(),
            feature_ids: Vec::new(),
            warnings: Vec::new(),
            decompressed: std::cell::OnceCell::new(),
            prefetch: std::cell::OnceCell::new(),
        };
        match endian {
            Endianness::Little => file.parse_headers(LittleEndian)?,
            Endianness::Big => file.parse_headers(BigEndian)?,
        }
        file.index_attrs();
        Ok(file)
    }

    fn parse_headers<E: Endian>(&mut self, endian: E) -> Result<(), ReadError> {
        let len = self.bytes.len() as u64;
        let mut c = Cursor::new(&self.bytes[..], 0, endian, "perf.data header");
        c.u64()?;
        let size = c.u64()?;
        self.header_size = size;
        if size == PERF_PIPE_HEADER_SIZE {
            self.pipe = true;
            self.data_start = 16;
            self.data_end = self.bytes.len();
            return self.prescan_pipe(endian);
        }
        // perf itself accepts only 104 (and 72 before features); a larger header from a newer writer keeps the
        // fields we know at the same offsets.
        if size < 72 {
            return Err(ReadError::invalid(
                "perf.data header",
                8,
                format!("header size {size} is neither 16 (pipe mode) nor at least 72 (file mode)"),
            ));
        }
        if size > len {
            return Err(ReadError::Truncated {
                what: "perf.data header",
                offset: 0,
                needed: size,
                available: len,
            });
        }
        if size != PERF_FILE_HEADER_SIZE && size != 72 {
            warn(&mut self.warnings, Some(8), format!("header size {size} is larger than the 104 bytes perf writes; extra bytes ignored"));
        }
        let attr_size = c.u64()?;
        let (attrs_off, attrs_size) = (c.u64()?, c.u64()?);
        let (data_off, data_size) = (c.u64()?, c.u64()?);
        let _event_types = (c.u64()?, c.u64()?);
        let mut bitmap = [0u64; 4];
        if size >= PERF_FILE_HEADER_SIZE {
            for w in &mut bitmap {
                *w = c.u64()?;
            }
        }

        // Attrs.
        if attr_size == 0 {
            return Err(ReadError::invalid("perf.data header", 16, "attr_size is 0"));
        }
        let attrs = section(&self.bytes, attrs_off, attrs_size, "attrs section")?;
        let nr = attrs_size / attr_size;
        let mut pos = 0usize;
        for i in 0..nr {
            let at = attrs_off + pos as u64;
            let (attr, used) = PerfEventAttr::parse(attrs.get(pos..).unwrap_or(&[]), at, endian)?;
            let mut ids_c = Cursor::new(
                &attrs[pos + used..],
                at + used as u64,
                endian,
                "attr ids section",
            );
            let (ids_off, ids_size) = (ids_c.u64()?, ids_c.u64()?);
            if used as u64 + 16 != attr_size {
                warn(&mut self.warnings,
                    Some(at),
                    format!("attr {i} is {used}+16 bytes but the header says entries are {attr_size}; read by the attr's own size"),
                );
            }
            pos += used + 16;
            let ids_bytes = section(&self.bytes, ids_off, ids_size, "attr ids")?;
            let ids = ids_bytes
                .chunks_exact(8)
                .map(|b| endian.read_u64(b.try_into().expect("8 bytes")))
                .collect();
            self.attrs.push(AttrEntry {
                attr,
                ids,
                name: None,
            });
        }

        // Data.
        if data_off > len {
            return Err(ReadError::invalid(
                "data section",
                32,
                format!("offset {data_off:#x} is past the end of the file ({len:#x})"),
            ));
        }
        let mut data_end = data_off.saturating_add(data_size);
        // perf record writes data size 0 at the start and the real size at the end. A file with size 0 is either
        // finished with no records (a valid feature table follows) or was killed (records follow).
        let killed = data_size == 0
            && len > data_off
            && !feature_table_fits(&self.bytes, data_off, &bitmap, endian);
        if killed {
            warn(&mut self.warnings, None, "data size is 0 (was 'perf record' properly terminated?); reading records to the end of the file");
            data_end = len;
        } else if data_end > len {
            warn(&mut self.warnings,
                Some(len),
                format!("data section ends at {data_end:#x} but the file ends at {len:#x}; the file is truncated"),
            );
            data_end = len;
        }
        self.data_start = data_off as usize;
        self.data_end = data_end as usize;

        // Features: one section per set bit, ascending, right after the data.
        if killed {
            return Ok(());
        }
        let table_at = data_off.saturating_add(data_size);
        let mut tc = Cursor::new(
            self.bytes.get(table_at.min(len) as usize..).unwrap_or(&[]),
            table_at,
            endian,
            "feature section table",
        );
        for id in 0..HEADER_FEAT_BITS {
            if bitmap[(id / 64) as usize] & (1 << (id % 64)) == 0 {
                continue;
            }
            let entry_at = tc.offset();
            let (off, size) = match (tc.u64(), tc.u64()) {
                (Ok(o), Ok(s)) => (o, s),
                _ => {
                    warn(
                        &mut self.warnings,
                        Some(entry_at),
                        "feature section table is truncated; remaining features skipped",
                    );
                    break;
                }
            };
            if table::feature_name(id).is_none() {
                warn(
                    &mut self.warnings,
                    Some(off),
                    format!(
                        "unknown feature {id} ({size} bytes) skipped; written by a newer perf?"
                    ),
                );
            }
            let bytes = match section(&self.bytes, off, size, "feature section") {
                Ok(b) => b,
                Err(e) => {
                    warn(
                        &mut self.warnings,
                        Some(entry_at),
                        format!("feature {} skipped: {e}", feature_label(id)),
                    );
                    continue;
                }
            };
            self.feature_ids.push(id);
            if let Err(e) = self.features.parse_section(id, bytes, off, endian) {
                warn(
                    &mut self.warnings,
                    Some(off),
                    format!(
                        "feature {} could not be parsed and is skipped: {e}",
                        feature_label(id)
                    ),
                );
            }
        }
        Ok(())
    }

    /// Pipe mode: attrs and features arrive as records; collect them before iteration so `attrs()` and
    /// `features()` are complete up front.
    fn prescan_pipe<E: Endian>(&mut self, endian: E) -> Result<(), ReadError> {
        let mut pos = self.data_start;
        // Framing errors end the scan; the record iterator reports them after the records before them.
        while let Ok(Some(RawRec {
            ty,
            misc,
            body,
            next,
        })) = raw_at(&self.bytes, self.data_end, pos, endian)
        {
            let h = (ty, misc);
            let at = pos as u64;
            let r: Result<(), ReadError> = match h.0 {
                PERF_RECORD_HEADER_ATTR => {
                    PerfEventAttr::parse(body, at + 8, endian).map(|(attr, used)| {
                        let ids = body[used..]
                            .chunks_exact(8)
                            .map(|b| endian.read_u64(b.try_into().expect("8 bytes")))
                            .collect();
                        self.attrs.push(AttrEntry {
                            attr,
                            ids,
                            name: None,
                        });
                    })
                }
                PERF_RECORD_HEADER_FEATURE => {
                    let mut c = Cursor::new(body, at + 8, endian, "HEADER_FEATURE record");
                    match c.u64() {
                        Ok(id) if id < u64::from(HEADER_FEAT_BITS) => {
                            let id = id as u32;
                            if table::feature_name(id).is_none() {
                                warn(
                                    &mut self.warnings,
                                    Some(at),
                                    format!(
                                        "unknown feature {id} skipped; written by a newer perf?"
                                    ),
                                );
                            }
                            self.feature_ids.push(id);
                            self.features.parse_section(id, c.rest(), at + 16, endian)
                        }
                        Ok(id) => Err(ReadError::invalid(
                            "HEADER_FEATURE record",
                            at + 8,
                            format!("feature id {id} is out of range"),
                        )),
                        Err(e) => Err(e),
                    }
                }
                // The tracing data follows the record (its size in the body): kept as the HEADER_TRACING_DATA
                // feature a file-mode reader would find, so tracepoint formats come from one place.
                PERF_RECORD_HEADER_TRACING_DATA => {
                    let mut c = Cursor::new(body, at + 8, endian, "HEADER_TRACING_DATA record");
                    c.u32().map(|n| {
                        let start = pos + 8 + body.len();
                        if let Some(payload) = self.bytes.get(start..start + n as usize) {
                            self.feature_ids.push(HEADER_TRACING_DATA);
                            self.features
                                .other
                                .push((HEADER_TRACING_DATA, payload.to_vec()));
                        }
                    })
                }
                PERF_RECORD_HEADER_BUILD_ID => parse_build_id(h.1, body, at + 8, endian).map(|b| {
                    self.features.build_ids.push(b);
                }),
                _ => Ok(()),
            };
            if let Err(e) = r {
                warn(
                    &mut self.warnings,
                    Some(at),
                    format!("{} record skipped: {e}", type_label(h.0)),
                );
            }
            pos = next;
        }
        if !self.features.build_ids.is_empty() && !self.feature_ids.contains(&HEADER_BUILD_ID) {
            self.feature_ids.push(HEADER_BUILD_ID);
        }
        self.feature_ids.sort_unstable();
        self.feature_ids.dedup();
        Ok(())
    }

    /// `perf record -z`: the decoded records of every COMPRESSED record (see [`super::compressed`]), decoded on
    /// first use.
    pub(super) fn decompressed<E: Endian>(&self, endian: E) -> &super::compressed::Decompressed {
        self.decompressed.get_or_init(|| {
            super::compressed::decompress(&self.bytes, self.data_start, self.data_end, endian)
        })
    }

    /// Starts faulting in the data section's pages on another thread (once per file; mapped files only).
    pub(super) fn start_prefetch(&self) -> Option<&prefetch::Prefetch> {
        let Backing::Map(map) = &self.bytes else {
            return None;
        };
        self.prefetch
            .get_or_init(|| prefetch::Prefetch::start(map.clone(), self.data_start..self.data_end))
            .as_ref()
    }

    /// Bytes of the data section the prefetcher has released behind the reader (see [`prefetch`]).
    #[cfg(test)]
    pub(super) fn released_bytes(&self) -> usize {
        self.prefetch
            .get()
            .and_then(Option::as_ref)
            .map_or(0, prefetch::Prefetch::released)
    }

    fn index_attrs(&mut self) {
        if let Some(descs) = &self.features.event_desc {
            for (i, entry) in self.attrs.iter_mut().enumerate() {
                let by_id = descs
                    .iter()
                    .find(|d| entry.ids.first().is_some_and(|id| d.ids.contains(id)));
                entry.name = by_id.or_else(|| descs.get(i)).map(|d| d.name.clone());
            }
        }
        self.layouts = self
            .attrs
            .iter()
            .map(|a| SampleLayout::of(&a.attr))
            .collect();
        for (i, a) in self.attrs.iter().enumerate() {
            for id in &a.ids {
                self.id_to_attr.entry(*id).or_insert(i);
            }
        }
        // The id can be found only where every attr puts it at the same place (perf: evlist id_pos/is_pos).
        let same = |f: &dyn Fn(&SampleLayout) -> Option<usize>| {
            let first = f(self.layouts.first()?);
            self.layouts
                .iter()
                .all(|l| f(l) == first)
                .then_some(first)
                .flatten()
        };
        self.sample_id_pos = same(&|l| l.sample_id_pos());
        self.trailer_id_pos = same(&|l| l.trailer_id_pos_from_end());
        if self.attrs.is_empty() {
            warn(
                &mut self.warnings,
                None,
                "the file describes no events (no attrs); samples cannot be parsed",
            );
        }
    }

    /// Reads the record header at `pos`; returns the header, the body and where the next record starts, or
    /// `None` at the end of the data.
    pub(super) fn raw_at<E: Endian>(
        &self,
        pos: usize,
        endian: E,
    ) -> Result<Option<RawRec<'_>>, ReadError> {
        raw_at(&self.bytes, self.data_end, pos, endian)
    }

    /// Which attr a kernel record belongs to (user records: none). Found by the event id where every attr puts
    /// it at the same place; otherwise, and for id 0 (synthesized records, perf's `evlist__event2evsel`) or ids
    /// no attr lists, the first attr — whose layout perf requires every attr's `sample_id` to share.
    fn attr_index_for(&self, ty: u32, body: &[u8]) -> Option<usize> {
        if self.attrs.is_empty() || ty >= PERF_RECORD_USER_TYPE_START {
            return None;
        }
        if self.attrs.len() == 1 {
            return Some(0);
        }
        let pos = if ty == PERF_RECORD_SAMPLE {
            self.sample_id_pos
        } else {
            self.trailer_id_pos.and_then(|p| body.len().checked_sub(p))
        };
        let id = pos
            .and_then(|p| body.get(p..p + 8))
            .map(|b| self.endian.read_u64(b.try_into().expect("8 bytes")));
        Some(
            id.and_then(|id| self.id_to_attr.get(&id).copied())
                .unwrap_or(0),
        )
    }

    pub(super) fn parse_record<'a, E: Endian>(
        &'a self,
        pos: usize,
        h: &RawRec<'a>,
        endian: E,
    ) -> Result<Record<'a>, ReadError> {
        let attr_index = self.attr_index_for(h.ty, h.body);
        let meta = RecordMeta {
            offset: pos as u64,
            ty: h.ty,
            misc: h.misc,
            attr_index,
            ..Default::default()
        };
        let body = h.body;
        let layout = attr_index.and_then(|i| self.layouts.get(i));
        records::parse_body(meta, body, layout, endian, self.endian)
    }

    /// The byte order of the file.
    pub fn endian(&self) -> Endianness {
        self.endian
    }

    /// Whether this is a pipe-mode stream.
    pub fn is_pipe(&self) -> bool {
        self.pipe
    }

    /// The header's `size` field (104 for files perf writes, 16 in pipe mode).
    pub fn header_size(&self) -> u64 {
        self.header_size
    }

    /// The events of the file.
    pub fn attrs(&self) -> &[AttrEntry] {
        &self.attrs
    }

    /// The sample layout of attr `i`.
    pub fn layout(&self, i: usize) -> Option<&SampleLayout> {
        self.layouts.get(i)
    }

    /// The parsed feature sections.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// Ids of the feature sections present (including unknown ones), ascending.
    pub fn feature_ids(&self) -> &[u32] {
        &self.feature_ids
    }

    /// Build-ids from the BUILD_ID feature (or pipe-mode HEADER_BUILD_ID records).
    pub fn build_ids(&self) -> &[super::BuildIdEntry] {
        &self.features.build_ids
    }

    /// File range of the data section.
    pub fn data_range(&self) -> std::ops::Range<usize> {
        self.data_start..self.data_end
    }

    /// The whole file's bytes.
    pub(super) fn data_bytes(&self) -> &[u8] {
        &self.bytes[..self.data_end]
    }

    /// Warnings from opening the file (header, attrs, features). Record warnings are on [`Records`].
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The records in time order, as perf delivers them (see the module docs).
    pub fn records(&self) -> Records<'_> {
        Records::new(self, true)
    }

    /// The records in file order, unsorted (for dumps).
    pub fn records_in_file_order(&self) -> Records<'_> {
        Records::new(self, false)
    }
}

pub(super) fn warn(warnings: &mut Vec<Warning>, offset: Option<u64>, message: impl Into<String>) {
    warnings.push(Warning {
        offset,
        message: message.into(),
    });
}

/// Maps a regular file read-only. Mapping instead of reading saves copying every byte once and touches only the
/// pages a run looks at: perf.data files of DWARF recordings are mostly stack snapshots of which the unwinder reads
/// a few hundred bytes each, and DSOs (debug files especially) are large while a run symbolizes few addresses.
pub fn map_file(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // With `release_pages` below, the only `unsafe` outside perf/record/sys.rs, kept here because records borrow
    // from the map (STYLE 2.8) and `data` must not depend on `record`; the symbolizer maps DSOs through this
    // function too.
    // SAFETY: the map is read-only and private to its owner; the only hazard is another process truncating or
    // rewriting the file in place while it is mapped (SIGBUS, changing bytes). perf.data files are written once and
    // then only read; DSOs and build-id cache entries are replaced by rename, not rewritten. Every access through
    // the map is bounds-checked against the length seen at open.
    unsafe { memmap2::Mmap::map(file) }
}

/// Unmaps the pages of `range` of `map` (MADV_DONTNEED) but keeps the range mapped: the next access maps them
/// again from the page cache, with the same bytes. See [`super::prefetch`] for why.
pub(super) fn release_pages(
    map: &memmap2::Mmap,
    range: std::ops::Range<usize>,
) -> std::io::Result<()> {
    // SAFETY: for a read-only shared file mapping, MADV_DONTNEED only drops this process's page-table entries;
    // a later read faults the page back in from the page cache, so every byte reads as before and borrows of
    // the map stay valid (memmap2 marks DONTNEED unsafe for private writable maps, where it discards written
    // pages). The hazard is the map's own (see `map_file`).
    unsafe {
        map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, range.start, range.len())
    }
}

/// Reads the record header at `pos` of `bytes` (data ends at `data_end`); returns the header, the body and
/// where the next record starts, or `None` at the end of the data.
pub(super) fn raw_at<E: Endian>(
    bytes: &[u8],
    data_end: usize,
    pos: usize,
    endian: E,
) -> Result<Option<RawRec<'_>>, ReadError> {
    if pos >= data_end {
        return Ok(None);
    }
    let data = &bytes[pos..data_end];
    if data.len() < 8 {
        return Err(ReadError::Truncated {
            what: "record header",
            offset: pos as u64,
            needed: 8,
            available: data.len() as u64,
        });
    }
    let mut c = Cursor::new(data, pos as u64, endian, "record header");
    let (ty, misc, size) = (c.u32()?, c.u16()?, c.u16()?);
    if size < 8 {
        return Err(ReadError::invalid(
            "record header",
            pos as u64,
            format!("record size {size} is below the 8-byte header (type {ty})"),
        ));
    }
    let mut c = Cursor::new(data, pos as u64, endian, "record");
    c.take(8)?;
    let body = c
        .take(u64::from(size) - 8)
        .map_err(|_| ReadError::Truncated {
            what: "record",
            offset: pos as u64,
            needed: u64::from(size),
            available: data.len() as u64,
        })?;
    // Two user records are followed by a payload outside their size (session.c: the returned "skip").
    let extra = match ty {
        PERF_RECORD_HEADER_TRACING_DATA => {
            let mut b = Cursor::new(body, pos as u64 + 8, endian, "HEADER_TRACING_DATA record");
            align8(u64::from(b.u32()?))
        }
        PERF_RECORD_AUXTRACE => {
            let mut b = Cursor::new(body, pos as u64 + 8, endian, "AUXTRACE record");
            b.u64()?
        }
        _ => 0,
    };
    let next = (pos as u64)
        .checked_add(u64::from(size))
        .and_then(|n| n.checked_add(extra))
        .filter(|&n| n <= data_end as u64)
        .ok_or(ReadError::Truncated {
            what: "record payload",
            offset: pos as u64,
            needed: u64::from(size).saturating_add(extra),
            available: data.len() as u64,
        })?;
    Ok(Some(RawRec {
        ty,
        misc,
        body,
        next: next as usize,
    }))
}

/// Whether a feature section table for `bitmap` at `at` lies in the file and every entry points inside it.
fn feature_table_fits<E: Endian>(bytes: &[u8], at: u64, bitmap: &[u64; 4], endian: E) -> bool {
    let n: u32 = bitmap.iter().map(|w| w.count_ones()).sum();
    if n == 0 {
        return false;
    }
    let len = bytes.len() as u64;
    let Some(table) = at
        .checked_add(16 * u64::from(n))
        .filter(|&end| end <= len)
        .map(|end| &bytes[at as usize..end as usize])
    else {
        return false;
    };
    table.chunks_exact(16).all(|e| {
        let off = endian.read_u64(e[..8].try_into().expect("8 bytes"));
        let size = endian.read_u64(e[8..].try_into().expect("8 bytes"));
        off >= at && off.checked_add(size).is_some_and(|end| end <= len)
    })
}

fn legacy_endian(bytes: &[u8]) -> Result<Endianness, ReadError> {
    let field = bytes.get(16..24).ok_or(ReadError::Truncated {
        what: "perf.data header",
        offset: 16,
        needed: 8,
        available: bytes.len().saturating_sub(16) as u64,
    })?;
    let arr: [u8; 8] = field.try_into().expect("8 bytes");
    let sizes = [
        PERF_ATTR_SIZE_VER0,
        PERF_ATTR_SIZE_VER1,
        PERF_ATTR_SIZE_VER2,
        PERF_ATTR_SIZE_VER3,
        PERF_ATTR_SIZE_VER4,
    ]
    .map(|s| u64::from(s) + 16);
    if sizes.contains(&u64::from_le_bytes(arr)) {
        Ok(Endianness::Little)
    } else if sizes.contains(&u64::from_be_bytes(arr)) {
        Ok(Endianness::Big)
    } else {
        Err(ReadError::invalid(
            "perf.data header",
            16,
            "legacy PERFFILE header with an attr size that matches no known layout in either byte order",
        ))
    }
}

fn section<'a>(
    bytes: &'a [u8],
    offset: u64,
    size: u64,
    what: &'static str,
) -> Result<&'a [u8], ReadError> {
    let len = bytes.len() as u64;
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(&bytes[offset as usize..end as usize]),
        _ => Err(ReadError::Truncated {
            what,
            offset,
            needed: size,
            available: len.saturating_sub(offset),
        }),
    }
}

fn feature_label(id: u32) -> String {
    table::feature_name(id).map_or_else(|| format!("#{id}"), |n| n.to_string())
}

pub(super) fn type_label(ty: u32) -> String {
    table::record_type_name(ty).map_or_else(|| format!("type {ty}"), |n| n.to_string())
}
