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
use super::cursor::{u64_at, u64s, Cursor};
use super::features::{parse_build_id, Features};
use super::iter::Records;
use super::map::FileMap;
use super::raw::{kind, raw_at, type_label, warn, RawRec};
use super::sample::SampleLayout;
use super::source::{Backing, RecordSource};
use super::{ReadError, Warning, WarningLog};
use crate::perf::abi::*;
use object::endian::{BigEndian, Endian, Endianness, LittleEndian};
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

/// A perf.data file (or pipe-mode stream), parsed up to the records; records are parsed as they are iterated.
pub struct PerfFile {
    /// The bytes and what the record iterator needs of the headers.
    src: RecordSource,
    pipe: bool,
    header_size: u64,
    attrs: Vec<AttrEntry>,
    features: Features,
    feature_ids: Vec<u32>,
    /// Pipe mode: how many attrs had arrived when the EVENT_DESC feature did. perf names only those from it
    /// (`process_event_desc` looks each up among the events it has), so a stream that sends its features
    /// first, as `perf record -o -` does, has its events named from their attrs.
    named_by_event_desc: Option<usize>,
    /// Pipe mode: how many of the build-ids came before the first kernel record (see [`PerfFile::leading_build_ids`]).
    leading_build_ids: usize,
    warnings: WarningLog,
}

impl std::fmt::Debug for PerfFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfFile")
            .field("len", &self.src.bytes.len())
            .field("endian", &self.src.endian)
            .field("pipe", &self.pipe)
            .field("attrs", &self.attrs)
            .finish_non_exhaustive()
    }
}

/// The file-mode `perf_file_header` past its magic and size: where the attrs and data are, and which feature
/// sections follow the data.
struct FileHeader {
    attr_size: u64,
    attrs_off: u64,
    attrs_size: u64,
    data_off: u64,
    data_size: u64,
    /// HEADER_FEAT_BITS bits, one per feature section present; all clear in a 72-byte (pre-features) header.
    bitmap: [u64; 4],
}

impl FileHeader {
    /// Reads the header of `size` bytes (checked against the file) at the start of `bytes`.
    fn read<E: Endian>(
        bytes: &[u8],
        size: u64,
        endian: E,
        warnings: &mut WarningLog,
    ) -> Result<Self, ReadError> {
        let len = bytes.len() as u64;
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
            warn(warnings, kind::HEADER, Some(8), format!("header size {size} is larger than the 104 bytes perf writes; extra bytes ignored"));
        }
        let mut c = Cursor::new(bytes, 0, endian, "perf.data header");
        let _magic_and_size = (c.u64()?, c.u64()?);
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
        Ok(FileHeader {
            attr_size,
            attrs_off,
            attrs_size,
            data_off,
            data_size,
            bitmap,
        })
    }
}

impl PerfFile {
    /// Opens and maps `path` (a regular file; other kinds are read into memory).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReadError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_file(file, path)
    }

    /// Reads an open file: mapped when it is a regular file (e.g. stdin redirected from a file); a pipe
    /// (`perf record -o - | bport script`) is first copied, in 1 MB pieces, into an unnamed temporary file (see
    /// [`spill`]) which is then mapped like a recording on disk. `name` is only for messages.
    pub fn from_file(file: std::fs::File, name: impl AsRef<Path>) -> Result<Self, ReadError> {
        let io = |source| ReadError::Io {
            path: name.as_ref().to_path_buf(),
            source,
        };
        let meta = file.metadata().map_err(io)?;
        let file = if meta.is_file() {
            file
        } else {
            spill(file, &std::env::temp_dir()).map_err(io)?
        };
        let len = file.metadata().map_err(io)?.len();
        if len == 0 {
            return Err(ReadError::Empty);
        }
        let map = FileMap::map(&file).map_err(io)?;
        Self::parse(Backing::Map(std::sync::Arc::new(map)))
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
        let Some(&magic) = bytes.first_chunk::<8>().filter(|_| bytes.len() >= 16) else {
            return Err(ReadError::Truncated {
                what: "perf.data header",
                offset: 0,
                needed: 16,
                available: bytes.len() as u64,
            });
        };
        let endian = match &magic {
            b"PERFILE2" => Endianness::Little,
            b"2ELIFREP" => Endianness::Big,
            // Legacy v1 files (perf before 3.4) have no byte-order mark; the attr entry size tells
            // (`try_all_file_abis`).
            b"PERFFILE" => legacy_endian(&bytes)?,
            _ => return Err(ReadError::BadMagic { magic }),
        };
        let mut file = PerfFile {
            src: RecordSource::new(bytes, endian),
            pipe: false,
            header_size: 0,
            attrs: Vec::new(),
            features: Features::default(),
            feature_ids: Vec::new(),
            named_by_event_desc: None,
            leading_build_ids: 0,
            warnings: WarningLog::new(),
        };
        match endian {
            Endianness::Little => file.parse_headers(LittleEndian)?,
            Endianness::Big => file.parse_headers(BigEndian)?,
        }
        file.index_attrs();
        file.warnings.finish();
        Ok(file)
    }

    /// The header phases in the order the file lays them out: the fixed header (pipe mode stops there and
    /// scans its records instead), the attrs, the data range, the feature sections.
    fn parse_headers<E: Endian>(&mut self, endian: E) -> Result<(), ReadError> {
        let mut c = Cursor::new(&self.src.bytes[..], 0, endian, "perf.data header");
        c.u64()?;
        let size = c.u64()?;
        self.header_size = size;
        if size == PERF_PIPE_HEADER_SIZE {
            self.pipe = true;
            self.src.data_start = 16;
            self.src.data_end = self.src.bytes.len();
            self.src.stated_data_end = self.src.data_end as u64;
            return self.prescan_pipe(endian);
        }
        let header = FileHeader::read(&self.src.bytes, size, endian, &mut self.warnings)?;
        self.read_attrs(&header, endian)?;
        if self.place_data(&header, endian)? {
            self.read_features(&header, endian);
        }
        Ok(())
    }

    /// The attrs section: each attr read by its own size, then its ids section.
    fn read_attrs<E: Endian>(&mut self, header: &FileHeader, endian: E) -> Result<(), ReadError> {
        let FileHeader {
            attr_size,
            attrs_off,
            attrs_size,
            ..
        } = *header;
        if attr_size == 0 {
            return Err(ReadError::invalid("perf.data header", 16, "attr_size is 0"));
        }
        let attrs = section(&self.src.bytes, attrs_off, attrs_size, "attrs")?;
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
                warn(&mut self.warnings, kind::HEADER,
                    Some(at),
                    format!("attr {i} is {used}+16 bytes but the header says entries are {attr_size}; read by the attr's own size"),
                );
            }
            pos += used + 16;
            let ids_bytes = section(&self.src.bytes, ids_off, ids_size, "attr ids")?;
            let ids = u64s(ids_bytes, endian).collect();
            self.attrs.push(AttrEntry {
                attr,
                ids,
                name: None,
            });
        }
        Ok(())
    }

    /// Where the records are: the stated data range, cut to the file when the header overstates it or when a
    /// killed `perf record` left the size at 0. Returns whether the feature sections can follow the data (not when
    /// the data itself is cut).
    fn place_data<E: Endian>(&mut self, header: &FileHeader, endian: E) -> Result<bool, ReadError> {
        let len = self.src.bytes.len() as u64;
        let FileHeader {
            data_off,
            data_size,
            bitmap,
            ..
        } = *header;
        if data_off > len {
            return Err(ReadError::OutsideFile {
                what: "data",
                offset: data_off,
                size: data_size,
                file_len: len,
            });
        }
        let mut data_end = data_off.saturating_add(data_size);
        let data_end_stated = data_end;
        self.src.stated_data_end = if data_size < super::IMPLAUSIBLE {
            data_end
        } else {
            len
        };
        // perf record writes data size 0 at the start and the real size at the end. A file with size 0 is either
        // finished with no records (a valid feature table follows) or was killed (records follow).
        let killed = data_size == 0
            && len > data_off
            && !feature_table_fits(&self.src.bytes, data_off, &bitmap, endian);
        if killed {
            warn(&mut self.warnings, kind::HEADER, None, "data size is 0 (was 'perf record' properly terminated?); reading records to the end of the file");
            data_end = len;
        } else if data_end > len {
            warn(
                &mut self.warnings,
                kind::HEADER,
                None,
                if data_size < super::IMPLAUSIBLE {
                    format!(
                        "the file is truncated at byte {len}: the header says its records end at byte {data_end}, so \
                         the last {} bytes of records ({:.1}% of them) and the feature sections after them are \
                         missing",
                        data_end - len,
                        (data_end - len) as f64 * 100.0 / data_size.max(1) as f64
                    )
                } else {
                    "the header's data size is garbage; reading records to the end of the file"
                        .to_string()
                },
            );
            data_end = len;
        }
        self.src.data_start = data_off as usize;
        self.src.data_end = data_end as usize;

        // The features come right after the data, so a file cut in its data has none, which the warning above
        // says.
        Ok(!killed && data_end_stated <= len)
    }

    /// The feature sections: one per set bit, ascending, located by the table right after the data. A section that
    /// cannot be read is skipped with a warning; the file stays readable.
    fn read_features<E: Endian>(&mut self, header: &FileHeader, endian: E) {
        let len = self.src.bytes.len() as u64;
        let FileHeader {
            data_off,
            data_size,
            bitmap,
            ..
        } = *header;
        let table_at = data_off.saturating_add(data_size);
        let mut tc = Cursor::new(
            self.src
                .bytes
                .get(table_at.min(len) as usize..)
                .unwrap_or(&[]),
            table_at,
            endian,
            "feature section table",
        );
        let (mut cut_features, mut cut_end) = (Vec::new(), 0u64);
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
                        kind::FEATURE,
                        Some(entry_at),
                        "feature section table is truncated; remaining features skipped",
                    );
                    break;
                }
            };
            if table::feature_name(id).is_none() {
                let what = if size < super::IMPLAUSIBLE {
                    format!("unknown feature {id} ({size} bytes) skipped; written by a newer perf?")
                } else {
                    format!("unknown feature {id} skipped; its section table entry is garbage")
                };
                warn(&mut self.warnings, kind::FEATURE, Some(off), what);
            }
            let bytes = match section(&self.src.bytes, off, size, "feature") {
                Ok(b) => b,
                // A file cut short loses its feature sections together (perf writes them last): one warning.
                Err(_)
                    if off
                        .checked_add(size)
                        .is_some_and(|end| end < super::IMPLAUSIBLE) =>
                {
                    cut_features.push(feature_label(id));
                    cut_end = cut_end.max(off + size);
                    continue;
                }
                Err(e) => {
                    warn(
                        &mut self.warnings,
                        kind::FEATURE,
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
                    kind::FEATURE,
                    Some(off),
                    format!(
                        "feature {} could not be parsed and is skipped: {e}",
                        feature_label(id)
                    ),
                );
            }
        }
        if !cut_features.is_empty() {
            warn(
                &mut self.warnings,
                kind::FEATURE,
                None,
                format!(
                    "the file is truncated at byte {len} of {cut_end}: the feature sections {} are missing (the \
                     records are complete)",
                    cut_features.join(", ")
                ),
            );
        }
    }

    /// Pipe mode: attrs and features arrive as records; collect them before iteration so `attrs()` and
    /// `features()` are complete up front.
    fn prescan_pipe<E: Endian>(&mut self, endian: E) -> Result<(), ReadError> {
        let mut pos = self.src.data_start;
        let mut kernel_record_seen = false;
        // Framing errors end the scan; the record iterator reports them after the records before them.
        while let Ok(Some(RawRec {
            ty,
            misc,
            body,
            next,
        })) = raw_at(&self.src.bytes, self.src.data_end, pos, endian)
        {
            let h = (ty, misc);
            let at = pos as u64;
            let r: Result<(), ReadError> = match h.0 {
                PERF_RECORD_HEADER_ATTR => {
                    PerfEventAttr::parse(body, at + 8, endian).map(|(attr, used)| {
                        let ids = u64s(&body[used..], endian).collect();
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
                                    kind::FEATURE,
                                    Some(at),
                                    format!(
                                        "unknown feature {id} skipped; written by a newer perf?"
                                    ),
                                );
                            }
                            self.feature_ids.push(id);
                            if id == HEADER_EVENT_DESC && self.named_by_event_desc.is_none() {
                                self.named_by_event_desc = Some(self.attrs.len());
                            }
                            self.features.parse_section(id, c.rest(), at + 16, endian)
                        }
                        Ok(id) => Err(ReadError::invalid(
                            "HEADER_FEATURE record",
                            at + 8,
                            if id < super::IMPLAUSIBLE {
                                format!("feature id {id} is out of range (0-255)")
                            } else {
                                "its feature id is garbage".to_string()
                            },
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
                        if let Some(payload) = self.src.bytes.get(start..start + n as usize) {
                            self.feature_ids.push(HEADER_TRACING_DATA);
                            self.features
                                .other
                                .push((HEADER_TRACING_DATA, payload.to_vec()));
                        }
                    })
                }
                PERF_RECORD_HEADER_BUILD_ID => parse_build_id(h.1, body, at + 8, endian).map(|b| {
                    self.features.build_ids.push(b);
                    if !kernel_record_seen {
                        self.leading_build_ids = self.features.build_ids.len();
                    }
                }),
                ty if ty < PERF_RECORD_USER_TYPE_START => {
                    kernel_record_seen = true;
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(e) = r {
                warn(
                    &mut self.warnings,
                    kind::SKIPPED,
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

    fn index_attrs(&mut self) {
        if let Some(descs) = &self.features.event_desc {
            let named = self.named_by_event_desc.unwrap_or(self.attrs.len());
            for (i, entry) in self.attrs.iter_mut().enumerate().take(named) {
                let by_id = descs
                    .iter()
                    .find(|d| entry.ids.first().is_some_and(|id| d.ids.contains(id)));
                entry.name = by_id.or_else(|| descs.get(i)).map(|d| d.name.clone());
            }
        }
        self.src.layouts = self
            .attrs
            .iter()
            .map(|a| SampleLayout::of(&a.attr))
            .collect();
        for (i, a) in self.attrs.iter().enumerate() {
            for id in &a.ids {
                self.src.id_to_attr.entry(*id).or_insert(i);
            }
        }
        // The id can be found only where every attr puts it at the same place (perf: evlist id_pos/is_pos).
        let same = |f: &dyn Fn(&SampleLayout) -> Option<usize>| {
            let first = f(self.src.layouts.first()?);
            self.src
                .layouts
                .iter()
                .all(|l| f(l) == first)
                .then_some(first)
                .flatten()
        };
        self.src.sample_id_pos = same(&|l| l.sample_id_pos());
        self.src.trailer_id_pos = same(&|l| l.trailer_id_pos_from_end());
        if self.attrs.is_empty() {
            warn(
                &mut self.warnings,
                kind::HEADER,
                None,
                "the file describes no events (no attrs); samples cannot be parsed",
            );
        }
    }

    /// The byte order of the file.
    pub fn endian(&self) -> Endianness {
        self.src.endian
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
        self.src.layouts.get(i)
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

    /// Pipe mode: the first `n` of [`Self::build_ids`] came before any kernel record. perf's reader meets
    /// HEADER_BUILD_ID records as it reads them, so those DSOs exist before the kernel's and any mapped one (the
    /// order `buildid-list` prints them in).
    pub fn leading_build_ids(&self) -> &[super::BuildIdEntry] {
        &self.features.build_ids[..self.leading_build_ids.min(self.features.build_ids.len())]
    }

    /// File range of the data section.
    pub fn data_range(&self) -> std::ops::Range<usize> {
        self.src.data_start..self.src.data_end
    }

    /// Bytes of the data section the prefetcher has released behind the reader (see [`super::prefetch`]).
    #[cfg(test)]
    pub(super) fn released_bytes(&self) -> usize {
        self.src.released_bytes()
    }

    /// Warnings from opening the file (header, attrs, features). Record warnings are on [`Records`].
    pub fn warnings(&self) -> &[Warning] {
        self.warnings.as_slice()
    }

    /// The records in time order, as perf delivers them (see the module docs).
    pub fn records(&self) -> Records<'_> {
        Records::new(&self.src, true)
    }

    /// The records in file order, unsorted (for dumps).
    pub fn records_in_file_order(&self) -> Records<'_> {
        Records::new(&self.src, false)
    }
}

/// Copies a stream to its end into a temporary file in `dir` that has no name (O_TMPFILE; where the file system
/// lacks it, a named one removed at once), and returns it for mapping.
///
/// Why not memory: a pipe cannot be mapped, and holding a DWARF recording's stream in a `Vec` took as much memory
/// as the stream (hundreds of MB; more while the vector grew). In a file the bytes are page cache, which the kernel
/// can write out and drop, and the reader then works as on a recording on disk — the page prefetcher and its
/// release of pages behind the reader included — so the process's own memory stays that of a file-mode run.
/// The records are not read as they arrive: the time order needs the rounds after them, and the stream's end
/// is where perf and bport learn the build-ids (HEADER_BUILD_ID records come last).
pub fn spill(mut stream: impl Read, dir: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(dir)
    {
        Ok(f) => f,
        Err(_) => {
            let path = dir.join(format!(
                ".bport-stream-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            f
        }
    };
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        std::io::Write::write_all(&mut file, &buf[..n])?;
    }
    Ok(file)
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
        let (Some(off), Some(size)) = (u64_at(e, 0, endian), u64_at(e, 8, endian)) else {
            return false;
        };
        off >= at && off.checked_add(size).is_some_and(|end| end <= len)
    })
}

fn legacy_endian(bytes: &[u8]) -> Result<Endianness, ReadError> {
    let arr: [u8; 8] =
        *bytes
            .get(16..)
            .and_then(|b| b.first_chunk())
            .ok_or(ReadError::Truncated {
                what: "perf.data header",
                offset: 16,
                needed: 8,
                available: bytes.len().saturating_sub(16) as u64,
            })?;
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
        _ => Err(ReadError::OutsideFile {
            what,
            offset,
            size,
            file_len: len,
        }),
    }
}

fn feature_label(id: u32) -> String {
    table::feature_name(id).map_or_else(|| format!("#{id}"), |n| n.to_string())
}
