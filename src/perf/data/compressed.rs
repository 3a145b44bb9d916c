//! `perf record -z` files: the records of each pass are zstd-compressed into PERF_RECORD_COMPRESSED records
//! (tools/perf/util/zstd.c). Decoded once, when an iterator first meets a COMPRESSED record; the reader then
//! iterates the decoded records in place of the COMPRESSED record that completed them.

use super::cursor::Cursor;
use super::raw::{raw_at, warn};
use super::Warning;
use crate::perf::abi::*;
use object::endian::Endian;
use std::collections::HashMap;
use std::io::Read;
use std::ops::Range;

/// The decoded records of a file's COMPRESSED records.
#[derive(Debug, Default)]
pub(super) struct Decompressed {
    /// The decoded records, back to back.
    pub(super) bytes: Vec<u8>,
    /// Offset of a COMPRESSED record → the complete records its frames completed, in `bytes`.
    pub(super) ranges: HashMap<u64, Range<usize>>,
    /// Damaged zstd data, reported by the iterator that triggered the decoding.
    pub(super) warnings: Vec<Warning>,
}

/// Decodes every COMPRESSED/COMPRESSED2 payload of the data section as one zstd stream; returns the decoded
/// records and, per COMPRESSED record offset, the range of complete records that the frames ending in it produced.
///
/// Deviation from perf, named: session.c feeds each COMPRESSED record to a streaming decoder and processes its
/// records right after it. perf flushes but never ends its one frame, and a pure frame decoder cannot hand out
/// the tail of an unfinished frame, so bport decodes whole frames and attaches their records to the COMPRESSED
/// record where the frame ends (for perf's files: the last one). Time order is the same — the queue sorts them
/// — only `records_in_file_order` shows them later than `perf report -D` does.
pub(super) fn decompress<E: Endian>(
    bytes: &[u8],
    data_start: usize,
    data_end: usize,
    endian: E,
) -> Decompressed {
    let mut warnings = Vec::new();
    let warnings = &mut warnings;
    let mut decomp = Vec::new();
    let mut ranges: HashMap<u64, Range<usize>> = HashMap::new();
    let mut input = Vec::new();
    let mut ends: Vec<(usize, u64)> = Vec::new();
    let mut pos = data_start;
    while let Ok(Some(r)) = raw_at(bytes, data_end, pos, endian) {
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
        return Decompressed::default();
    }
    // A bound on what a damaged or hostile file can make us allocate; real perf data compresses ~5–50×.
    let limit = (input.len() as u64)
        .saturating_mul(1024)
        .saturating_add(1 << 20);
    let mut frame_start = 0usize;
    let mut event_end = 0usize;
    while frame_start < input.len() {
        let before = decomp.len();
        let room = limit.saturating_sub(before as u64);
        let mut src = &input[frame_start..];
        let mut result = decode_frame(&mut src, &mut decomp, room);
        if result.is_err() && src.is_empty() {
            // perf never ends its frame (zstd.c: ZSTD_compressStream + ZSTD_flushStream, no ZSTD_e_end), so
            // the stream stops after a complete block; end it with an empty last raw block (header 0x000001).
            decomp.truncate(before);
            let mut ended = input[frame_start..].to_vec();
            ended.extend_from_slice(&[1, 0, 0]);
            result = decode_frame(&mut &ended[..], &mut decomp, room);
        }
        let frame_end = input.len() - src.len();
        let owner = ends
            .iter()
            .find(|(end, _)| *end >= frame_end.max(frame_start + 1))
            .map(|&(_, at)| at);
        if let Err(e) = result {
            warn(
                warnings,
                owner,
                format!("zstd data of a COMPRESSED record could not be decompressed ({e}); the records in it and after it are skipped"),
            );
            break;
        }
        if decomp.len() as u64 >= limit {
            warn(
                warnings,
                owner,
                "decompressed records exceed 1024 times their compressed size; the rest is skipped",
            );
            break;
        }
        // The complete records decoded so far belong to the COMPRESSED record that ends this frame.
        let start = event_end;
        while let Some(size) = decomp.get(event_end + 6..event_end + 8) {
            let size = usize::from(endian.read_u16(size.try_into().expect("2 bytes")));
            if size < 8 || event_end + size > decomp.len() {
                break;
            }
            event_end += size;
        }
        if let Some(at) = owner {
            let r = ranges.entry(at).or_insert(start..start);
            r.end = event_end;
        }
        frame_start = frame_end.max(frame_start + 1);
        if src.is_empty() {
            break;
        }
    }
    Decompressed {
        bytes: decomp,
        ranges,
        warnings: std::mem::take(warnings),
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
