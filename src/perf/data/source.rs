//! What the record iterator reads from: a file's bytes (mapped or owned), its data section, how to find the attr
//! (and so the sample layout) of a record, and the state decoded or started on first iteration (the COMPRESSED
//! records' decoded bytes, the page prefetcher).
//!
//! Owns: [`RecordSource`], built by the reader once the headers are parsed, borrowed by [`super::iter`]. Does not
//! own: the headers, attrs and features ([`super::reader`]), record framing ([`super::raw`]) or record layouts
//! ([`super::records`]). Sits between them so the reader and the iterator both import it and not each other.

use super::codec;
use super::compressed::{self, Decompressed};
use super::map::FileMap;
use super::prefetch::Prefetch;
use super::raw::{self, RawRec};
use super::records::{Record, RecordMeta};
use super::sample::SampleLayout;
use super::ReadError;
use crate::perf::abi::*;
use object::endian::{Endian, Endianness};
use std::collections::HashMap;
use std::sync::Arc;

pub(super) enum Backing {
    // Shared with the page prefetcher (see `prefetch`), which keeps the map alive while it runs.
    Map(Arc<FileMap>),
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

/// A file's bytes and what is needed to cut and parse the records of its data section.
pub(super) struct RecordSource {
    pub(super) bytes: Backing,
    pub(super) endian: Endianness,
    pub(super) data_start: usize,
    pub(super) data_end: usize,
    /// Where the header says the data ends (past `data_end` in a truncated file).
    pub(super) stated_data_end: u64,
    /// One per attr, in the file's order.
    pub(super) layouts: Vec<SampleLayout>,
    pub(super) id_to_attr: HashMap<u64, usize>,
    pub(super) sample_id_pos: Option<usize>,
    pub(super) trailer_id_pos: Option<usize>,
    /// The records of every COMPRESSED record, decoded when an iterator first meets one (files without them,
    /// the common case, are not scanned for them: that scan touched every page of a large file before the
    /// first record was read).
    decompressed: std::cell::OnceCell<Decompressed>,
    /// Pages of the data section are faulted in ahead of the reader by another thread, started by the first
    /// iterator (see [`super::prefetch`]).
    prefetch: std::cell::OnceCell<Option<Prefetch>>,
}

impl RecordSource {
    /// `bytes` in byte order `endian`, with no data section and no attrs yet (the reader fills them in).
    pub(super) fn new(bytes: Backing, endian: Endianness) -> Self {
        RecordSource {
            bytes,
            endian,
            data_start: 0,
            data_end: 0,
            stated_data_end: 0,
            layouts: Vec::new(),
            id_to_attr: HashMap::new(),
            sample_id_pos: None,
            trailer_id_pos: None,
            decompressed: std::cell::OnceCell::new(),
            prefetch: std::cell::OnceCell::new(),
        }
    }

    /// Reads the record header at `pos`; returns the header, the body and where the next record starts, or
    /// `None` at the end of the data.
    pub(super) fn raw_at<E: Endian>(
        &self,
        pos: usize,
        endian: E,
    ) -> Result<Option<RawRec<'_>>, ReadError> {
        raw::raw_at(&self.bytes, self.data_end, pos, endian)
    }

    /// Which attr a kernel record belongs to (user records: none). Found by the event id where every attr puts
    /// it at the same place; otherwise, and for id 0 (synthesized records, perf's `evlist__event2evsel`) or ids
    /// no attr lists, the first attr — whose layout perf requires every attr's `sample_id` to share.
    fn attr_index_for(&self, ty: u32, body: &[u8]) -> Option<usize> {
        if self.layouts.is_empty() || ty >= PERF_RECORD_USER_TYPE_START {
            return None;
        }
        if self.layouts.len() == 1 {
            return Some(0);
        }
        let pos = if ty == PERF_RECORD_SAMPLE {
            self.sample_id_pos
        } else {
            self.trailer_id_pos.and_then(|p| body.len().checked_sub(p))
        };
        let id = pos.and_then(|p| super::cursor::u64_at(body, p, self.endian));
        Some(
            id.and_then(|id| self.id_to_attr.get(&id).copied())
                .unwrap_or(0),
        )
    }

    /// The time `parse_record` would give `h`, read alone (samples and known kernel records with a trailer).
    pub(super) fn time_of<E: Endian>(&self, h: &RawRec<'_>, endian: E) -> Option<u64> {
        if h.ty != PERF_RECORD_SAMPLE && !super::records::is_known_type(h.ty) {
            return None;
        }
        let layout = self.layouts.get(self.attr_index_for(h.ty, h.body)?)?;
        layout.time_of(h.ty, h.body, endian)
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
        codec::parse_body(meta, body, layout, endian, self.endian)
    }

    /// The file's bytes up to the end of the data section.
    pub(super) fn data_bytes(&self) -> &[u8] {
        &self.bytes[..self.data_end]
    }

    /// `perf record -z`: the decoded records of every COMPRESSED record (see [`super::compressed`]), decoded on
    /// first use.
    pub(super) fn decompressed<E: Endian>(&self, endian: E) -> &Decompressed {
        self.decompressed.get_or_init(|| {
            compressed::decompress(&self.bytes, self.data_start, self.data_end, endian)
        })
    }

    /// Starts faulting in the data section's pages on another thread (once per file; mapped files only).
    pub(super) fn start_prefetch(&self) -> Option<&Prefetch> {
        let Backing::Map(map) = &self.bytes else {
            return None;
        };
        self.prefetch
            .get_or_init(|| Prefetch::start(map.clone(), self.data_start..self.data_end))
            .as_ref()
    }

    /// Bytes of the data section the prefetcher has released behind the reader (see [`super::prefetch`]).
    #[cfg(test)]
    pub(super) fn released_bytes(&self) -> usize {
        self.prefetch
            .get()
            .and_then(Option::as_ref)
            .map_or(0, Prefetch::released)
    }
}
