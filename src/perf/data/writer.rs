//! Writing perf.data, the mirror of [`super::reader`]: file mode (header, attr ids, attrs, data, feature table and
//! sections, then the header is fixed up) and pipe mode (header, HEADER_ATTR records, data, HEADER_FEATURE and
//! HEADER_BUILD_ID records).
//!
//! A target [`KernelAbi`] caps what is written to what the perf of that kernel's era reads (`abi::table`):
//! the attr size, the attr bits, the record types (others are dropped and counted) and the feature sections.

use super::attr::PerfEventAttr;
use super::codec;
use super::features::{write_build_id, Features};
use super::records::{
    self, CommRecord, ForkRecord, Mmap2Record, MmapRecord, Record, RecordMeta, SampleId,
};
use super::sample::SampleLayout;
use super::WriteError;
use crate::perf::abi::*;
use object::endian::{BigEndian, Endian, Endianness, LittleEndian};
use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

/// How to write.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// The perf ABI the file must stay within (default: everything bport knows).
    pub abi: KernelAbi,
    /// Byte order of the file (default: native; records from the ring buffer must be native).
    pub endian: Endianness,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            abi: KernelAbi::newest(),
            endian: Endianness::default(),
        }
    }
}

impl WriterOptions {
    /// Options for a file the perf of kernel `version`'s era reads.
    pub fn for_kernel(version: &KernelVersion) -> Self {
        WriterOptions {
            abi: KernelAbi::for_version(version),
            ..Default::default()
        }
    }
}

/// What was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Records written to the data section.
    pub records: u64,
    /// Of which samples.
    pub samples: u64,
    /// Bytes of the data section.
    pub data_bytes: u64,
    /// Records dropped because the target ABI lacks their type, by type.
    pub dropped: BTreeMap<u32, u64>,
    /// Feature sections written (ids, ascending).
    pub features: Vec<u32>,
    /// Feature sections the caller had but the target's perf does not read (ids).
    pub features_dropped: Vec<u32>,
}

struct AttrOut {
    attr: PerfEventAttr,
    ids: Vec<u64>,
    layout: SampleLayout,
}

/// Writes a perf.data file or pipe-mode stream. Add every attr before the first record.
pub struct PerfFileWriter<W: Write> {
    out: W,
    opts: WriterOptions,
    pipe: bool,
    attrs: Vec<AttrOut>,
    attr_size: u32,
    data_offset: Option<u64>,
    pos: u64,
    outcome: WriteOutcome,
}

impl PerfFileWriter<std::io::BufWriter<std::fs::File>> {
    /// Creates (truncates) `path` for a file-mode perf.data.
    pub fn create(path: impl AsRef<Path>, opts: WriterOptions) -> Result<Self, WriteError> {
        let f = std::fs::File::create(path)?;
        Self::new(std::io::BufWriter::new(f), opts)
    }
}

impl<W: Write + Seek> PerfFileWriter<W> {
    /// A file-mode writer over `out` (positioned at its start).
    pub fn new(mut out: W, opts: WriterOptions) -> Result<Self, WriteError> {
        // The header is written last, when the section offsets are known.
        out.write_all(&[0; PERF_FILE_HEADER_SIZE as usize])?;
        Ok(Self::with(out, opts, false, PERF_FILE_HEADER_SIZE))
    }

    /// Ends the data, writes the feature sections the target's perf reads and the attrs, then fixes the header.
    /// Returns the output and what was written.
    pub fn finish(mut self, features: &Features) -> Result<(W, WriteOutcome), WriteError> {
        if self.pipe {
            return self.finish_pipe(features);
        }
        self.start_data()?;
        let data_offset = self.data_offset.expect("start_data sets it");
        let data_size = self.pos - data_offset;
        self.outcome.data_bytes = data_size;
        let (ids, dropped): (Vec<u32>, Vec<u32>) = features
            .ids()
            .into_iter()
            .partition(|&id| self.feature_allowed(id));
        self.outcome.features_dropped = dropped;
        let endian = self.opts.endian;
        let mut sections = Vec::new();
        for &id in &ids {
            let data = match endian {
                Endianness::Little => features.write_section(id, LittleEndian),
                Endianness::Big => features.write_section(id, BigEndian),
            };
            if let Some(d) = data {
                sections.push((id, d));
            }
        }
        let table_len = 16 * sections.len() as u64;
        let mut table = Vec::new();
        let mut payload_at = self.pos + table_len;
        let mut bitmap = [0u64; 4];
        for (id, d) in &sections {
            table.extend_from_slice(&endian.write_u64(payload_at));
            table.extend_from_slice(&endian.write_u64(d.len() as u64));
            payload_at += d.len() as u64;
            bitmap[(*id / 64) as usize] |= 1 << (id % 64);
            self.outcome.features.push(*id);
        }
        self.emit(&table)?;
        for (_, d) in &sections {
            self.emit(d)?;
        }
        let mut h = Vec::with_capacity(PERF_FILE_HEADER_SIZE as usize);
        let attr_entry = u64::from(self.attr_size) + 16;
        let attrs_offset = data_offset - attr_entry * self.attrs.len() as u64;
        for v in [
            PERF_MAGIC2,
            PERF_FILE_HEADER_SIZE,
            attr_entry,
            attrs_offset,
            attr_entry * self.attrs.len() as u64,
            data_offset,
            data_size,
            0,
            0,
        ] {
            h.extend_from_slice(&endian.write_u64(v));
        }
        for w in bitmap {
            h.extend_from_slice(&endian.write_u64(w));
        }
        self.out.flush()?;
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&h)?;
        self.out.seek(SeekFrom::Start(self.pos))?;
        self.out.flush()?;
        Ok((self.out, self.outcome))
    }
}

impl<W: Write> PerfFileWriter<W> {
    /// A pipe-mode writer over `out` (like `perf record -o -`): attrs are written as they are added.
    pub fn new_pipe(mut out: W, opts: WriterOptions) -> Result<Self, WriteError> {
        let mut h = Vec::new();
        h.extend_from_slice(&opts.endian.write_u64(PERF_MAGIC2));
        h.extend_from_slice(&opts.endian.write_u64(PERF_PIPE_HEADER_SIZE));
        out.write_all(&h)?;
        Ok(Self::with(out, opts, true, PERF_PIPE_HEADER_SIZE))
    }

    fn with(out: W, opts: WriterOptions, pipe: bool, pos: u64) -> Self {
        PerfFileWriter {
            out,
            opts,
            pipe,
            attrs: Vec::new(),
            attr_size: PERF_ATTR_SIZE_VER0,
            data_offset: None,
            pos,
            outcome: WriteOutcome::default(),
        }
    }

    fn emit(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        self.out.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn target(&self) -> String {
        self.opts
            .abi
            .version
            .as_ref()
            .map_or_else(|| "the newest kernel".to_string(), |v| format!("Linux {v}"))
    }

    /// Adds an event with its kernel ids; returns its attr index. The attr is checked against the target ABI and
    /// written at the smallest size that holds its fields, up to the target's size.
    pub fn add_attr(&mut self, attr: &PerfEventAttr, ids: &[u64]) -> Result<usize, WriteError> {
        if self.data_offset.is_some() {
            return Err(WriteError::Usage(
                "attrs must be added before the first record".into(),
            ));
        }
        let abi = &self.opts.abi;
        let checks = [
            ("attr flag bits", attr.flags & !abi.attr_flags),
            ("sample_type bits", attr.sample_type & !abi.sample_types),
            ("read_format bits", attr.read_format & !abi.read_formats),
            (
                "branch_sample_type bits",
                attr.branch_sample_type & !abi.branch_sample_types,
            ),
        ];
        for (what, extra) in checks {
            if extra != 0 {
                return Err(WriteError::NotInAbi {
                    what,
                    value: extra,
                    target: self.target(),
                });
            }
        }
        let needed = attr.min_size();
        if needed > abi.attr_size {
            return Err(WriteError::NotInAbi {
                what: "attr size",
                value: u64::from(needed),
                target: self.target(),
            });
        }
        let stated = attr.size.clamp(PERF_ATTR_SIZE_VER0, PERF_ATTR_SIZE_NEWEST);
        // Pipe mode: perf before 6.6 reads a HEADER_ATTR's ids right after its own `struct perf_event_attr`,
        // whatever attr.size says (the fixed `attr.id[]` field, replaced by perf_record_header_attr_id() in
        // 6.6), so a 72-byte attr had its ids read from the next records and as attr fields: perf 6.1 crashed on
        // `bport record -o -` streams whenever an id had bit 11 set (read as branch_sample_type CALL_STACK).
        // The attr is written at VER7 (128 bytes), the struct of perf 5.13–6.2, or smaller where the target's
        // era is older (its perf's struct is that size); perf 6.3–6.5 (136 bytes) are left out.
        let floor = if self.pipe { PERF_ATTR_SIZE_VER7 } else { 0 };
        let size = abi.cap_attr_size(stated.max(needed).max(floor));
        let mut a = attr.clone();
        a.size = size;
        if self.pipe {
            let mut body = Vec::new();
            a.write(size, self.opts.endian, &mut body);
            for id in ids {
                body.extend_from_slice(&self.opts.endian.write_u64(*id));
            }
            let meta = RecordMeta {
                ty: PERF_RECORD_HEADER_ATTR,
                ..Default::default()
            };
            let raw = Record::User(records::RawRecord { meta, body: &body });
            let bytes = self.encode(&raw)?;
            self.emit(&bytes)?;
        }
        self.attr_size = self.attr_size.max(size);
        self.attrs.push(AttrOut {
            layout: SampleLayout::of(&a),
            attr: a,
            ids: ids.to_vec(),
        });
        Ok(self.attrs.len() - 1)
    }

    /// File mode: writes the ids and attrs sections (all attrs at one size, as `attr_size` is per file).
    fn start_data(&mut self) -> Result<(), WriteError> {
        if self.data_offset.is_some() {
            return Ok(());
        }
        if self.pipe {
            self.data_offset = Some(self.pos);
            return Ok(());
        }
        let endian = self.opts.endian;
        let mut ids_at = Vec::new();
        for i in 0..self.attrs.len() {
            let bytes: Vec<u8> = self.attrs[i]
                .ids
                .iter()
                .flat_map(|id| endian.write_u64(*id))
                .collect();
            ids_at.push((self.pos, bytes.len() as u64));
            self.emit(&bytes)?;
        }
        let mut entries = Vec::new();
        for (a, (off, len)) in self.attrs.iter_mut().zip(ids_at) {
            a.attr.size = self.attr_size;
            a.attr.write(self.attr_size, endian, &mut entries);
            entries.extend_from_slice(&endian.write_u64(off));
            entries.extend_from_slice(&endian.write_u64(len));
        }
        self.emit(&entries)?;
        self.data_offset = Some(self.pos);
        Ok(())
    }

    fn encode(&self, rec: &Record<'_>) -> Result<Vec<u8>, WriteError> {
        let layout = if rec.meta().ty < PERF_RECORD_USER_TYPE_START {
            let i = rec.meta().attr_index.unwrap_or(0);
            match (self.attrs.get(i), self.attrs.is_empty()) {
                (Some(a), _) => Some(&a.layout),
                (None, true) => None,
                (None, false) => {
                    return Err(WriteError::Usage(format!(
                        "record names attr {i}, but only {} were added",
                        self.attrs.len()
                    )))
                }
            }
        } else {
            None
        };
        match self.opts.endian {
            Endianness::Little => codec::encode(rec, layout, LittleEndian),
            Endianness::Big => codec::encode(rec, layout, BigEndian),
        }
    }

    /// Uncapped (no target version), every feature passes, even ids bport does not know, so files round-trip.
    fn feature_allowed(&self, id: u32) -> bool {
        self.opts.abi.version.is_none() || self.opts.abi.supports_feature(id)
    }

    fn admit(&mut self, ty: u32) -> Result<bool, WriteError> {
        self.start_data()?;
        // Uncapped (no target version): pass through even types bport does not know, so files round-trip.
        if self.opts.abi.version.is_none() || self.opts.abi.supports_record(ty) {
            Ok(true)
        } else {
            *self.outcome.dropped.entry(ty).or_default() += 1;
            Ok(false)
        }
    }

    fn count(&mut self, ty: u32) {
        self.outcome.records += 1;
        if ty == PERF_RECORD_SAMPLE {
            self.outcome.samples += 1;
        }
    }

    /// Writes a complete record as the kernel put it in the ring buffer (native byte order, header included).
    /// Types the target ABI lacks are dropped and counted in [`WriteOutcome::dropped`].
    pub fn write_raw_record(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        if self.opts.endian != Endianness::default() {
            return Err(WriteError::Usage(
                "raw records are native-endian; this writer writes the other byte order".into(),
            ));
        }
        if bytes.len() < 8 {
            return Err(WriteError::Usage(format!(
                "a record of {} bytes has no complete header",
                bytes.len()
            )));
        }
        let ty = u32::from_ne_bytes(bytes[0..4].try_into().expect("8 bytes checked"));
        let size = u16::from_ne_bytes(bytes[6..8].try_into().expect("8 bytes checked"));
        if usize::from(size) != bytes.len() || size % 8 != 0 {
            return Err(WriteError::Usage(format!(
                "record header says {size} bytes but {} were given (type {ty})",
                bytes.len()
            )));
        }
        if self.admit(ty)? {
            self.emit(bytes)?;
            self.count(ty);
        }
        Ok(())
    }

    /// Writes a typed record (any [`Record`]); kernel records get the `sample_id` trailer of their attr
    /// (`meta.attr_index`, default 0) from `meta.sample_id`.
    pub fn write_record(&mut self, rec: &Record<'_>) -> Result<(), WriteError> {
        let ty = rec.meta().ty;
        if self.admit(ty)? {
            let bytes = self.encode(rec)?;
            self.emit(&bytes)?;
            self.count(ty);
        }
        Ok(())
    }

    /// Writes a synthesized COMM (`exec`: set `PERF_RECORD_MISC_COMM_EXEC`).
    pub fn write_comm(
        &mut self,
        pid: u32,
        tid: u32,
        comm: &[u8],
        exec: bool,
        sample_id: SampleId,
    ) -> Result<(), WriteError> {
        let misc = if exec { PERF_RECORD_MISC_COMM_EXEC } else { 0 };
        self.write_record(&Record::Comm(CommRecord {
            meta: meta(PERF_RECORD_COMM, misc, sample_id),
            pid,
            tid,
            comm,
        }))
    }

    /// Writes a synthesized MMAP (`misc`: cpumode, e.g. `PERF_RECORD_MISC_USER`).
    pub fn write_mmap(
        &mut self,
        mut rec: MmapRecord<'_>,
        misc: u16,
        sample_id: SampleId,
    ) -> Result<(), WriteError> {
        rec.meta = meta(PERF_RECORD_MMAP, misc, sample_id);
        self.write_record(&Record::Mmap(rec))
    }

    /// Writes a synthesized MMAP2, or an equivalent MMAP when the target's kernel predates MMAP2.
    pub fn write_mmap2(
        &mut self,
        mut rec: Mmap2Record<'_>,
        misc: u16,
        sample_id: SampleId,
    ) -> Result<(), WriteError> {
        if !self.opts.abi.supports_record(PERF_RECORD_MMAP2) {
            let m = MmapRecord {
                meta: RecordMeta::default(),
                pid: rec.pid,
                tid: rec.tid,
                addr: rec.addr,
                len: rec.len,
                pgoff: rec.pgoff,
                filename: rec.filename,
            };
            return self.write_mmap(m, misc & !PERF_RECORD_MISC_MMAP_BUILD_ID, sample_id);
        }
        rec.meta = meta(PERF_RECORD_MMAP2, misc, sample_id);
        self.write_record(&Record::Mmap2(rec))
    }

    /// Writes a synthesized FORK.
    pub fn write_fork(
        &mut self,
        mut rec: ForkRecord,
        sample_id: SampleId,
    ) -> Result<(), WriteError> {
        rec.meta = meta(PERF_RECORD_FORK, 0, sample_id);
        self.write_record(&Record::Fork(rec))
    }

    /// Writes an EXIT.
    pub fn write_exit(
        &mut self,
        mut rec: ForkRecord,
        sample_id: SampleId,
    ) -> Result<(), WriteError> {
        rec.meta = meta(PERF_RECORD_EXIT, 0, sample_id);
        self.write_record(&Record::Exit(rec))
    }

    /// Writes a FINISHED_ROUND (after each pass over all ring buffers, so readers can sort by time in rounds).
    pub fn write_finished_round(&mut self) -> Result<(), WriteError> {
        self.write_record(&Record::FinishedRound(meta(
            PERF_RECORD_FINISHED_ROUND,
            0,
            SampleId::default(),
        )))
    }

    /// Bytes written so far (header included).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The outcome so far.
    pub fn outcome(&self) -> &WriteOutcome {
        &self.outcome
    }

    /// Pipe mode, after the attrs and before the records: the feature sections known at the start, as
    /// HEADER_FEATURE records (perf record writes them there, `perf_event__synthesize_for_pipe`, so a reader of
    /// the stream knows the host, the event names and the command line before the first sample; EVENT_DESC names
    /// only the attrs before it). Build-ids are known only at the end: pass them to
    /// [`finish_pipe`](Self::finish_pipe).
    pub fn write_pipe_features(&mut self, features: &Features) -> Result<(), WriteError> {
        if !self.pipe || self.data_offset.is_some() {
            return Err(WriteError::Usage(
                "write_pipe_features belongs to a pipe-mode writer, before its records".into(),
            ));
        }
        self.emit_pipe_features(features)
    }

    /// Pipe mode, after the features: the tracepoints' formats as a HEADER_TRACING_DATA record, whose payload
    /// follows it outside its size (perf's `perf_event__synthesize_tracing_data`: the size field is the payload
    /// padded to 8 bytes).
    pub fn write_pipe_tracing_data(&mut self, data: &[u8]) -> Result<(), WriteError> {
        if !self.pipe || self.data_offset.is_some() {
            return Err(WriteError::Usage(
                "write_pipe_tracing_data belongs to a pipe-mode writer, before its records".into(),
            ));
        }
        let padded = data.len().div_ceil(8) * 8;
        let size = u32::try_from(padded)
            .map_err(|_| WriteError::Usage("tracing data of 4 GB or more".into()))?;
        let endian = self.opts.endian;
        let mut rec = Vec::with_capacity(16 + padded);
        rec.extend_from_slice(&endian.write_u32(PERF_RECORD_HEADER_TRACING_DATA));
        rec.extend_from_slice(&endian.write_u16(0));
        rec.extend_from_slice(&endian.write_u16(16));
        rec.extend_from_slice(&endian.write_u32(size));
        rec.extend_from_slice(&[0; 4]);
        rec.extend_from_slice(data);
        rec.resize(16 + padded, 0);
        self.emit(&rec)
    }

    fn emit_pipe_features(&mut self, features: &Features) -> Result<(), WriteError> {
        let endian = self.opts.endian;
        let with_features = self.opts.abi.supports_record(PERF_RECORD_HEADER_FEATURE);
        for id in features.ids() {
            if id == HEADER_BUILD_ID {
                for b in &features.build_ids {
                    let mut bytes = Vec::new();
                    write_build_id(b, PERF_RECORD_HEADER_BUILD_ID, endian, &mut bytes);
                    self.emit(&bytes)?;
                }
                self.outcome.features.push(id);
                continue;
            }
            if !with_features || !self.feature_allowed(id) {
                self.outcome.features_dropped.push(id);
                continue;
            }
            let data = match endian {
                Endianness::Little => features.write_section(id, LittleEndian),
                Endianness::Big => features.write_section(id, BigEndian),
            };
            let Some(data) = data else { continue };
            let mut body = endian.write_u64(u64::from(id)).to_vec();
            body.extend_from_slice(&data);
            body.resize(body.len().div_ceil(8) * 8, 0);
            let rec = Record::User(records::RawRecord {
                meta: meta(PERF_RECORD_HEADER_FEATURE, 0, SampleId::default()),
                body: &body,
            });
            let bytes = self.encode(&rec)?;
            self.emit(&bytes)?;
            self.outcome.features.push(id);
        }
        Ok(())
    }

    /// Pipe mode: ends the stream with the features as HEADER_FEATURE records (when the target's perf knows
    /// them) and the build-ids as HEADER_BUILD_ID records.
    pub fn finish_pipe(mut self, features: &Features) -> Result<(W, WriteOutcome), WriteError> {
        if !self.pipe {
            return Err(WriteError::Usage(
                "finish_pipe on a file-mode writer; call finish".into(),
            ));
        }
        self.start_data()?;
        self.outcome.data_bytes = self.pos - self.data_offset.expect("start_data sets it");
        self.emit_pipe_features(features)?;
        self.out.flush()?;
        Ok((self.out, self.outcome))
    }
}

fn meta(ty: u32, misc: u16, sample_id: SampleId) -> RecordMeta {
    RecordMeta {
        offset: 0,
        ty,
        misc,
        attr_index: None,
        sample_id,
    }
}
