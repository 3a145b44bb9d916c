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
use super::records::{self, Record, RecordMeta};
use super::sample::SampleLayout;
use super::{ReadError, Warning};
use crate::perf::abi::*;
use object::endian::{BigEndian, Endian, Endianness, LittleEndian};
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
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
    Map(memmap2::Mmap),
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
    endian: Endianness,
    pipe: bool,
    header_size: u64,
    data_start: usize,
    data_end: usize,
    attrs: Vec<AttrEntry>,
    layouts: Vec<SampleLayout>,
    id_to_attr: HashMap<u64, usize>,
    sample_id_pos: Option<usize>,
    trailer_id_pos: Option<usize>,
    features: Features,
    feature_ids: Vec<u32>,
    warnings: Vec<Warning>,
    /// The records of every COMPRESSED record, decompressed at open; they are iterated in place of it.
    decomp: Vec<u8>,
    /// Offset of a COMPRESSED record → the complete records its frames completed, in `decomp`.
    decomp_ranges: HashMap<u64, std::ops::Range<usize>>,
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
struct RawRec<'a> {
    ty: u32,
    misc: u16,
    body: &'a [u8],
    next: usize,
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
            // SAFETY-free: memmap2's map is `unsafe` only because another process could truncate the file under
            // us; perf.data files are not rewritten while read, and every access below is bounds-checked anyway.
            // (The call itself lives in memmap2.)
            #[allow(unsafe_code)]
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
            return Self::parse(Backing::Map(map));
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
            decomp: Vec::new(),
            decomp_ranges: HashMap::new(),
        };
        match endian {
            Endianness::Little => {
                file.parse_headers(LittleEndian)?;
                file.decompress(LittleEndian);
            }
            Endianness::Big => {
                file.parse_headers(BigEndian)?;
                file.decompress(BigEndian);
            }
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
        if data_size == 0 && len > data_off {
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
        if data_size == 0 {
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

    /// `perf record -z`: the records of each pass are zstd frames inside COMPRESSED records (perf's
    /// `zstd_compress_stream_to_records`; a frame may span several records). Frames are decoded here, once, and
    /// the records each frame completes are iterated where the COMPRESSED record that ends the frame stands
    /// (session.c processes decompressed events right after their COMPRESSED record).
    fn decompress<E: Endian>(&mut self, endian: E) {
        let mut input = Vec::new();
        let mut ends: Vec<(usize, u64)> = Vec::new();
        let mut pos = self.data_start;
        while let Ok(Some(r)) = raw_at(&self.bytes, self.data_end, pos, endian) {
            let payload = match r.ty {
                PERF_RECORD_COMPRESSED => Some(r.body),
                // COMPRESSED2 (u): `u64 data_size` then the data, the record padded to 8 bytes.
                PERF_RECORD_COMPRESSED2 => {
                    let mut c = Cursor::new(r.body, pos as u64 + 8, endian, "COMPRESSED2 record");
                    c.u64().ok().and_then(|n| c.take(n).ok())
                }
                _ => None,
            };
            if let Some(p) = payload {
                input.extend_from_slice(p);
                ends.push((input.len(), pos as u64));
            }
            pos = r.next;
        }
        if input.is_empty() {
            return;
        }
        // A bound on what a damaged or hostile file can make us allocate; real perf data compresses ~5–50×.
        let limit = (input.len() as u64)
            .saturating_mul(1024)
            .saturating_add(1 << 20);
        let mut frame_start = 0usize;
        let mut event_end = 0usize;
        while frame_start < input.len() {
            let before = self.decomp.len();
            let room = limit.saturating_sub(before as u64);
            let mut src = &input[frame_start..];
            let mut result = decode_frame(&mut src, &mut self.decomp, room);
            if result.is_err() && src.is_empty() {
                // perf never ends its frame (zstd.c: ZSTD_compressStream + ZSTD_flushStream, no ZSTD_e_end), so
                // the stream stops after a complete block; end it with an empty last raw block (header 0x000001).
                self.decomp.truncate(before);
                let mut ended = input[frame_start..].to_vec();
                ended.extend_from_slice(&[1, 0, 0]);
                result = decode_frame(&mut &ended[..], &mut self.decomp, room);
            }
            let frame_end = input.len() - src.len();
            let owner = ends
                .iter()
                .find(|(end, _)| *end >= frame_end.max(frame_start + 1))
                .map(|&(_, at)| at);
            if let Err(e) = result {
                warn(
                    &mut self.warnings,
                    owner,
                    format!("zstd data of a COMPRESSED record could not be decompressed ({e}); the records in it and after it are skipped"),
                );
                break;
            }
            if self.decomp.len() as u64 >= limit {
                warn(&mut self.warnings, owner, "decompressed records exceed 1024 times their compressed size; the rest is skipped");
                break;
            }
            // The complete records decoded so far belong to the COMPRESSED record that ends this frame.
            let start = event_end;
            while let Some(size) = self.decomp.get(event_end + 6..event_end + 8) {
                let size = usize::from(endian.read_u16(size.try_into().expect("2 bytes")));
                if size < 8 || event_end + size > self.decomp.len() {
                    break;
                }
                event_end += size;
            }
            if let Some(at) = owner {
                let r = self.decomp_ranges.entry(at).or_insert(start..start);
                r.end = event_end;
            }
            frame_start = frame_end.max(frame_start + 1);
            if src.is_empty() {
                break;
            }
        }
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
    fn raw_at<E: Endian>(&self, pos: usize, endian: E) -> Result<Option<RawRec<'_>>, ReadError> {
        raw_at(&self.bytes, self.data_end, pos, endian)
    }

    fn attr_index_for(&self, ty: u32, body: &[u8]) -> Option<usize> {
        if self.attrs.len() <= 1 || ty >= PERF_RECORD_USER_TYPE_START {
            return if self.attrs.is_empty() || ty >= PERF_RECORD_USER_TYPE_START {
                None
            } else {
                Some(0)
            };
        }
        let pos = if ty == PERF_RECORD_SAMPLE {
            self.sample_id_pos?
        } else {
            body.len().checked_sub(self.trailer_id_pos?)?
        };
        let b = body.get(pos..pos + 8)?;
        let id = self.endian.read_u64(b.try_into().ok()?);
        // Synthesized records carry id 0 (perf's evlist__event2evsel: "Synthesized events have an id of zero").
        Some(self.id_to_attr.get(&id).copied().unwrap_or(0))
    }

    fn parse_record<'a, E: Endian>(
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

/// Decodes one zstd frame from `src` onto `out`, at most `room` bytes.
fn decode_frame(src: &mut &[u8], out: &mut Vec<u8>, room: u64) -> Result<(), String> {
    let d = ruzstd::decoding::StreamingDecoder::new(src).map_err(|e| e.to_string())?;
    d.take(room)
        .read_to_end(out)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn warn(warnings: &mut Vec<Warning>, offset: Option<u64>, message: impl Into<String>) {
    warnings.push(Warning {
        offset,
        message: message.into(),
    });
}

/// Reads the record header at `pos` of `bytes` (data ends at `data_end`); returns the header, the body and
/// where the next record starts, or `None` at the end of the data.
fn raw_at<E: Endian>(
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

fn type_label(ty: u32) -> String {
    table::record_type_name(ty).map_or_else(|| format!("type {ty}"), |n| n.to_string())
}

/// A queued record's sort key; the record itself waits in `Records::slots` (heap moves stay 24 bytes, not a
/// whole `Record`).
struct Queued {
    time: u64,
    seq: u64,
    slot: usize,
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    // Reversed: BinaryHeap is a max-heap and we pop the oldest first; ties keep file order.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// Iterator over a file's records; see [`PerfFile::records`]. Stops after the first framing error (yielded after
/// every record before it). A record whose body cannot be parsed is skipped with a warning.
pub struct Records<'a> {
    file: &'a PerfFile,
    pos: usize,
    sorted: bool,
    queue: BinaryHeap<Queued>,
    slots: Vec<Option<Record<'a>>>,
    free_slots: Vec<usize>,
    ready: VecDeque<Record<'a>>,
    seq: u64,
    next_flush: u64,
    max_time: u64,
    done: bool,
    error: Option<ReadError>,
    warnings: Vec<Warning>,
    unknown_types: HashSet<u32>,
    /// Inside a COMPRESSED record: position and end in `file.decomp`, and the record's file offset.
    inner: Option<(usize, usize, u64)>,
}

impl<'a> Records<'a> {
    fn new(file: &'a PerfFile, sorted: bool) -> Self {
        Records {
            file,
            pos: file.data_start,
            sorted,
            queue: BinaryHeap::new(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            ready: VecDeque::new(),
            seq: 0,
            next_flush: 0,
            max_time: 0,
            done: false,
            error: None,
            warnings: Vec::new(),
            unknown_types: HashSet::new(),
            inner: None,
        }
    }

    /// Warnings so far: unknown record types (one each), records skipped because their body was corrupt.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    fn flush_up_to(&mut self, limit: u64) {
        while self.queue.peek().is_some_and(|q| q.time <= limit) {
            let q = self.queue.pop().expect("peeked");
            let record = self.slots[q.slot]
                .take()
                .expect("a queued slot holds its record");
            self.free_slots.push(q.slot);
            self.ready.push_back(record);
        }
    }

    fn step<E: Endian>(&mut self, endian: E) {
        let file = self.file;
        if let Some((at, end, outer)) = self.inner {
            match raw_at(&file.decomp, end, at, endian) {
                Ok(Some(h)) => {
                    self.inner = Some((h.next, end, outer));
                    self.deliver(outer as usize, h, endian);
                }
                // The ranges hold only complete records, so this ends the inner stream.
                Ok(None) | Err(_) => self.inner = None,
            }
            return;
        }
        let pos = self.pos;
        let h = match file.raw_at(pos, endian) {
            Ok(Some(r)) => r,
            Ok(None) => {
                self.done = true;
                self.flush_up_to(u64::MAX);
                return;
            }
            Err(e) => {
                self.done = true;
                self.flush_up_to(u64::MAX);
                self.error = Some(e);
                return;
            }
        };
        self.pos = h.next;
        if let Some(range) = file.decomp_ranges.get(&(pos as u64)) {
            self.inner = Some((range.start, range.end, pos as u64));
        }
        self.deliver(pos, h, endian);
    }

    fn deliver<E: Endian>(&mut self, pos: usize, h: RawRec<'a>, endian: E) {
        let file = self.file;
        let record = match file.parse_record(pos, &h, endian) {
            Ok(r) => r,
            Err(e) => {
                self.warnings.push(Warning {
                    offset: Some(pos as u64),
                    message: format!("{} record skipped: {e}", type_label(h.ty)),
                });
                return;
            }
        };
        if let Record::Unknown(_) = record {
            if self.unknown_types.insert(h.ty) {
                let who = if h.ty >= PERF_RECORD_USER_TYPE_START {
                    "perf"
                } else {
                    "kernel"
                };
                self.warnings.push(Warning {
                    offset: Some(pos as u64),
                    message: format!("unknown record type {} skipped (from a newer {who}?); further records of this type are skipped silently", h.ty),
                });
            }
        }
        if !self.sorted {
            self.ready.push_back(record);
            return;
        }
        match (h.ty, record.time()) {
            (PERF_RECORD_FINISHED_ROUND, _) => {
                self.flush_up_to(self.next_flush);
                self.next_flush = self.max_time;
                self.ready.push_back(record);
            }
            (ty, Some(time)) if ty < PERF_RECORD_USER_TYPE_START => {
                self.max_time = self.max_time.max(time);
                self.seq += 1;
                let slot = match self.free_slots.pop() {
                    Some(i) => {
                        self.slots[i] = Some(record);
                        i
                    }
                    None => {
                        self.slots.push(Some(record));
                        self.slots.len() - 1
                    }
                };
                self.queue.push(Queued {
                    time,
                    seq: self.seq,
                    slot,
                });
            }
            _ => self.ready.push_back(record),
        }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(Ok(r));
            }
            if self.done {
                return self.error.take().map(Err);
            }
            match self.file.endian {
                Endianness::Little => self.step(LittleEndian),
                Endianness::Big => self.step(BigEndian),
            }
        }
    }
}
