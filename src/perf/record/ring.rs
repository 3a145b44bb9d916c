//! Safe reading of a perf ring buffer: the records between `data_tail` and `data_head`, borrowed from the mapping
//! without copying. A record that wraps around the end of the data area comes as two slices
//! ([`RawData::Split`]), as in linux-perf-event-reader's `RawData`; callers that need one slice copy only those.
//!
//! Owns record framing (the 8-byte `perf_event_header`); not the meaning of records (that is `perf::data`).

use crate::perf::sys::RingMap;

/// Bytes of one record in the ring, header included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawData<'a> {
    /// The record lies in one piece.
    Single(&'a [u8]),
    /// The record wraps: the first part ends at the end of the data area, the second starts at its beginning.
    Split(&'a [u8], &'a [u8]),
}

impl<'a> RawData<'a> {
    /// Total length in bytes.
    pub fn len(&self) -> usize {
        match self {
            RawData::Single(a) => a.len(),
            RawData::Split(a, b) => a.len() + b.len(),
        }
    }

    /// The record as one slice: borrowed when it is in one piece, else copied into `scratch`.
    pub fn contiguous<'s>(&self, scratch: &'s mut Vec<u8>) -> &'s [u8]
    where
        'a: 's,
    {
        match *self {
            RawData::Single(a) => a,
            RawData::Split(a, b) => {
                scratch.clear();
                scratch.extend_from_slice(a);
                scratch.extend_from_slice(b);
                scratch
            }
        }
    }

    /// Reads a native-endian u64 at `offset`, across the split if needed.
    pub fn u64_at(&self, offset: usize) -> Option<u64> {
        let mut bytes = [0u8; 8];
        self.copy_to(offset, &mut bytes)
            .then(|| u64::from_ne_bytes(bytes))
    }

    /// Reads a native-endian u32 at `offset`, across the split if needed.
    pub fn u32_at(&self, offset: usize) -> Option<u32> {
        let mut bytes = [0u8; 4];
        self.copy_to(offset, &mut bytes)
            .then(|| u32::from_ne_bytes(bytes))
    }

    fn copy_to(&self, offset: usize, out: &mut [u8]) -> bool {
        if offset
            .checked_add(out.len())
            .is_none_or(|end| end > self.len())
        {
            return false;
        }
        let (a, b) = match *self {
            RawData::Single(a) => (a, &[][..]),
            RawData::Split(a, b) => (a, b),
        };
        for (i, byte) in out.iter_mut().enumerate() {
            let at = offset + i;
            *byte = if at < a.len() { a[at] } else { b[at - a.len()] };
        }
        true
    }

    /// The record type from the header.
    pub fn record_type(&self) -> u32 {
        self.u32_at(0).unwrap_or(0)
    }
}

/// A framing problem: the kernel never produces one, so it means the mapping was misread; recording stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramingError {
    /// Position (ring offset, monotonically increasing) of the bad header.
    pub position: u64,
    /// The header's size field.
    pub size: u16,
}

/// A ring buffer reader over one mapping.
#[derive(Debug)]
pub struct Ring {
    map: RingMap,
}

impl Ring {
    /// Wraps a mapping.
    pub fn new(map: RingMap) -> Ring {
        Ring { map }
    }

    /// Calls `f` for every record published so far, in order, then releases their space to the kernel.
    /// Returns the number of bytes consumed.
    pub fn drain(&mut self, mut f: impl FnMut(RawData<'_>)) -> Result<u64, FramingError> {
        let head = self.map.data_head();
        let tail = self.map.data_tail();
        let (first, second) = self.map.published(tail, head);
        let result = walk(first, second, tail, &mut f);
        // On a framing error everything published is skipped too: the stream cannot be resynchronized.
        self.map.set_data_tail(head);
        result.map(|()| head.wrapping_sub(tail))
    }
}

/// Walks the records in the published bytes `first` then `second` (the wrapped part); `tail` is the ring
/// position of `first[0]`, for error messages.
fn walk(
    first: &[u8],
    second: &[u8],
    tail: u64,
    f: &mut impl FnMut(RawData<'_>),
) -> Result<(), FramingError> {
    let total = first.len() + second.len();
    let mut at = 0usize;
    while at < total {
        // Records are 8-aligned and the area is a multiple of 8, so an 8-byte header never straddles the parts.
        let header = if at < first.len() {
            &first[at..]
        } else {
            &second[at - first.len()..]
        };
        if header.len() < 8 {
            return Err(FramingError {
                position: tail + at as u64,
                size: 0,
            });
        }
        let rec_size = u16::from_ne_bytes([header[6], header[7]]);
        let len = usize::from(rec_size);
        if len < 8 || len > total - at {
            return Err(FramingError {
                position: tail + at as u64,
                size: rec_size,
            });
        }
        let raw = if at + len <= first.len() {
            RawData::Single(&first[at..at + len])
        } else if at >= first.len() {
            RawData::Single(&second[at - first.len()..at - first.len() + len])
        } else {
            RawData::Split(&first[at..], &second[..at + len - first.len()])
        };
        f(raw);
        at += len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ty: u32, size: u16, fill: u8) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&ty.to_ne_bytes());
        r.extend_from_slice(&0u16.to_ne_bytes());
        r.extend_from_slice(&size.to_ne_bytes());
        r.resize(usize::from(size), fill);
        r
    }

    /// Walks a whole ring image as `Ring::drain` does: through the published window.
    fn walk_ring(
        data: &[u8],
        tail: u64,
        head: u64,
        f: &mut impl FnMut(RawData<'_>),
    ) -> Result<(), FramingError> {
        let (a, b) = crate::perf::sys::ring::window(data.len(), tail, head);
        walk(&data[a], &data[b], tail, f)
    }

    /// Lays `records` into a ring of `size` bytes starting at position `tail`.
    fn ring_with(size: usize, tail: u64, records: &[Vec<u8>]) -> (Vec<u8>, u64) {
        let mut data = vec![0xeeu8; size];
        let mut pos = tail;
        for r in records {
            for &b in r {
                data[(pos as usize) % size] = b;
                pos += 1;
            }
        }
        (data, pos)
    }

    #[test]
    fn records_in_one_piece_and_across_the_end_are_yielded_in_order() {
        let recs = vec![record(9, 24, 1), record(3, 16, 2), record(10, 32, 3)];
        // Start 16 bytes before the end: the first record wraps.
        let tail = 128 * 3 + 112;
        let (data, head) = ring_with(128, tail, &recs);
        let mut seen = Vec::new();
        walk_ring(&data, tail, head, &mut |raw: RawData<'_>| {
            let mut scratch = Vec::new();
            let split = matches!(raw, RawData::Split(..));
            seen.push((
                raw.record_type(),
                split,
                raw.contiguous(&mut scratch).to_vec(),
            ));
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![
                (9, true, recs[0].clone()),
                (3, false, recs[1].clone()),
                (10, false, recs[2].clone()),
            ]
        );
    }

    #[test]
    fn split_reads_cross_the_boundary() {
        let raw = RawData::Split(&[1, 0, 0, 0, 2, 0], &[3, 0, 4, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(raw.u32_at(0), Some(1));
        assert_eq!(raw.u32_at(4), Some(0x0003_0002));
        assert_eq!(raw.u64_at(8), Some(4));
        assert_eq!(raw.u64_at(9), None);
        assert_eq!(raw.len(), 16);
    }

    #[test]
    fn a_bad_header_is_a_framing_error_not_a_panic() {
        let (data, head) = ring_with(64, 0, &[record(9, 8, 0)]);
        let mut bad = data.clone();
        bad[6] = 4; // size 4 < header
        assert_eq!(
            walk_ring(&bad, 0, head, &mut |_| {}),
            Err(FramingError {
                position: 0,
                size: 4
            })
        );
        // A size beyond head: the kernel cannot have published that.
        bad[6] = 200;
        assert!(walk_ring(&bad, 0, head, &mut |_| {}).is_err());
    }
}
