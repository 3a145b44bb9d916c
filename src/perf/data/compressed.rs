//! `perf record -z` files: the records of each pass are zstd-compressed into PERF_RECORD_COMPRESSED records
//! (tools/perf/util/zstd.c). Decoded once, when an iterator first meets a COMPRESSED record; the reader then
//! iterates the decoded records in place of the COMPRESSED record that completed them.

use super::cursor::{u16_at, Cursor};
use super::raw::{kind, raw_at, warn};
use super::WarningLog;
use crate::perf::abi::*;
use object::endian::Endian;
use std::collections::HashMap;
use std::ops::Range;
use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

/// The decoded records of a file's COMPRESSED records.
#[derive(Debug, Default)]
pub(super) struct Decompressed {
    /// The decoded records, back to back.
    pub(super) bytes: Vec<u8>,
    /// Offset of a COMPRESSED record → the complete records its frames completed, in `bytes`.
    pub(super) ranges: HashMap<u64, Range<usize>>,
    /// Damaged zstd data, reported by the iterator that triggered the decoding.
    pub(super) warnings: WarningLog,
}

/// Decodes every COMPRESSED/COMPRESSED2 payload of the data section as one zstd stream, the way perf's
/// session.c does: each payload is fed to one streaming decoder, and the complete records decoded so far belong
/// to the COMPRESSED record whose payload completed them (perf never ends its frame — zstd.c flushes with
/// ZSTD_flushStream, no ZSTD_e_end — and a streaming decoder hands out every flushed block at once).
///
/// libzstd (the `zstd` crate) does the decoding: it decodes perf's unfinished frame in one pass and at several
/// times the speed of the pure-Rust ruzstd it replaced (see Cargo.toml).
pub(super) fn decompress<E: Endian>(
    bytes: &[u8],
    data_start: usize,
    data_end: usize,
    endian: E,
) -> Decompressed {
    let mut warnings = WarningLog::new();
    let mut decomp: Vec<u8> = Vec::new();
    let mut ranges: HashMap<u64, Range<usize>> = HashMap::new();
    let mut decoder: Option<Decoder<'static>> = None;
    let mut compressed = 0u64;
    let mut event_end = 0usize;
    // What the decoder asked for last: a flushed stream waits for the next block header (3 bytes); more means
    // the data stopped inside a block or a frame header.
    let mut wanted = 0usize;
    let mut last_at = None;
    let mut pos = data_start;
    while let Ok(Some(r)) = raw_at(bytes, data_end, pos, endian) {
        let at = pos as u64;
        pos = r.next;
        last_at = Some(at);
        let Some(payload) = payload(r.ty, r.body, at, endian) else {
            continue;
        };
        compressed += payload.len() as u64;
        // A bound on what a damaged or hostile file can make us allocate; real perf data compresses ~5–50×.
        let limit = compressed.saturating_mul(1024).saturating_add(1 << 20);
        let d = match &mut decoder {
            Some(d) => d,
            None => match Decoder::new() {
                Ok(d) => decoder.insert(d),
                Err(e) => {
                    warn(
                        &mut warnings,
                        kind::COMPRESSED,
                        Some(at),
                        format!("no zstd decoder ({e}); the compressed records are skipped"),
                    );
                    break;
                }
            },
        };
        let failed = feed(d, payload, &mut decomp, limit, &mut wanted);
        // The complete records decoded so far belong to this COMPRESSED record.
        let start = event_end;
        event_end = complete_records_end(&decomp, event_end, endian);
        if event_end > start {
            ranges.insert(at, start..event_end);
        }
        if let Some(why) = failed {
            warn(&mut warnings, kind::COMPRESSED, Some(at), why);
            wanted = 0;
            break;
        }
    }
    const BLOCK_HEADER: usize = 3;
    if wanted > BLOCK_HEADER {
        warn(
            &mut warnings,
            kind::COMPRESSED,
            last_at,
            "zstd data of a COMPRESSED record could not be decompressed (it ends inside a zstd block or frame header); the records in it are skipped",
        );
    }
    decomp.shrink_to_fit();
    Decompressed {
        bytes: decomp,
        ranges,
        warnings,
    }
}

/// The zstd data of a COMPRESSED or COMPRESSED2 record at `at`; `None` for other records (or a COMPRESSED2 too
/// short for its size).
fn payload<E: Endian>(ty: u32, body: &[u8], at: u64, endian: E) -> Option<&[u8]> {
    match ty {
        PERF_RECORD_COMPRESSED => Some(body),
        // COMPRESSED2 (u): `u64 data_size` then the data, the record padded to 8 bytes.
        PERF_RECORD_COMPRESSED2 => {
            let mut c = Cursor::new(body, at + 8, endian, "COMPRESSED2 record");
            c.u64().ok().and_then(|n| c.take(n).ok())
        }
        _ => None,
    }
}

/// Feeds one payload to the decoder, appending what it decodes to `decomp`, at most `limit` bytes in all;
/// `wanted` becomes what the decoder asks for next. The reason to stop, when the data is damaged or too large.
fn feed(
    d: &mut Decoder<'static>,
    payload: &[u8],
    decomp: &mut Vec<u8>,
    limit: u64,
    wanted: &mut usize,
) -> Option<String> {
    let mut input = InBuffer::around(payload);
    loop {
        if decomp.len() as u64 >= limit {
            return Some(
                "decompressed records exceed 1024 times their compressed size; the rest is skipped"
                    .to_owned(),
            );
        }
        decomp.reserve((payload.len() * 16).max(1 << 16));
        let filled = decomp.len();
        let mut out = OutBuffer::around_pos(decomp, filled);
        match d.run(&mut input, &mut out) {
            // Done with this payload once it is consumed and the output did not fill up (nothing pending).
            Ok(hint) if input.pos() == payload.len() && out.pos() < out.capacity() => {
                *wanted = hint;
                return None;
            }
            Ok(hint) => *wanted = hint,
            Err(e) => return Some(format!("zstd data of a COMPRESSED record could not be decompressed ({e}); the records in it and after it are skipped")),
        }
    }
}

/// The end of the complete records in `decomp` from `event_end` on (each record's size is its header's).
fn complete_records_end<E: Endian>(decomp: &[u8], mut event_end: usize, endian: E) -> usize {
    while let Some(size) = u16_at(decomp, event_end + 6, endian).map(usize::from) {
        if size < 8 || event_end + size > decomp.len() {
            break;
        }
        event_end += size;
    }
    event_end
}
