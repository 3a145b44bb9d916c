//! A bounds-checked reader over a byte slice that knows its file offset, so every error names where it happened.

use super::ReadError;
use object::endian::Endian;

/// Reads fixed-size values from `data`, which starts at file offset `base`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a, E: Endian> {
    data: &'a [u8],
    pos: usize,
    base: u64,
    endian: E,
    what: &'static str,
}

impl<'a, E: Endian> Cursor<'a, E> {
    pub(crate) fn new(data: &'a [u8], base: u64, endian: E, what: &'static str) -> Self {
        Cursor {
            data,
            pos: 0,
            base,
            endian,
            what,
        }
    }

    /// The file offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    // The readers run for every field of every record: inlined, with the error built out of line, they are a
    // bounds check and a load (`Cursor::u64` alone was 7% of `bport script` as a call).
    #[inline]
    pub(crate) fn take(&mut self, n: u64) -> Result<&'a [u8], ReadError> {
        if n > self.remaining() as u64 {
            return Err(self.truncated(n));
        }
        let n = n as usize;
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[cold]
    #[inline(never)]
    fn truncated(&self, n: u64) -> ReadError {
        ReadError::Truncated {
            what: self.what,
            offset: self.offset(),
            needed: n,
            available: self.remaining() as u64,
        }
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        if N > self.remaining() {
            return Err(self.truncated(N as u64));
        }
        let mut a = [0u8; N];
        a.copy_from_slice(&self.data[self.pos..self.pos + N]);
        self.pos += N;
        Ok(a)
    }

    #[inline]
    pub(crate) fn u16(&mut self) -> Result<u16, ReadError> {
        Ok(self.endian.read_u16(self.array()?))
    }

    #[inline]
    pub(crate) fn u32(&mut self) -> Result<u32, ReadError> {
        Ok(self.endian.read_u32(self.array()?))
    }

    #[inline]
    pub(crate) fn i32(&mut self) -> Result<i32, ReadError> {
        Ok(self.endian.read_i32(self.array()?))
    }

    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64, ReadError> {
        Ok(self.endian.read_u64(self.array()?))
    }

    /// `n` u64s as raw bytes (checked for overflow of `n * 8`).
    pub(crate) fn u64s(&mut self, n: u64) -> Result<&'a [u8], ReadError> {
        let bytes = n.checked_mul(8).ok_or_else(|| {
            ReadError::invalid(
                self.what,
                self.offset(),
                format!(
                    "its entry count ({}) is garbage",
                    if n < crate::perf::data::IMPLAUSIBLE {
                        n.to_string()
                    } else {
                        "more than fits in memory".into()
                    }
                ),
            )
        })?;
        self.take(bytes)
    }

    /// A NUL-terminated string inside the rest of the data (padding after the NUL is skipped by the caller).
    pub(crate) fn c_str_in_rest(&self) -> &'a [u8] {
        let rest = self.rest();
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        &rest[..end]
    }
}

/// The `u16` at `at` in `bytes`, when all of it is there.
#[inline]
pub(crate) fn u16_at<E: Endian>(bytes: &[u8], at: usize, endian: E) -> Option<u16> {
    Some(endian.read_u16(*bytes.get(at..)?.first_chunk()?))
}

/// The `u32` at `at` in `bytes`, when all of it is there.
#[inline]
pub(crate) fn u32_at<E: Endian>(bytes: &[u8], at: usize, endian: E) -> Option<u32> {
    Some(endian.read_u32(*bytes.get(at..)?.first_chunk()?))
}

/// The `u64` at `at` in `bytes`, when all of it is there.
#[inline]
pub(crate) fn u64_at<E: Endian>(bytes: &[u8], at: usize, endian: E) -> Option<u64> {
    Some(endian.read_u64(*bytes.get(at..)?.first_chunk()?))
}

/// The whole `u64`s of `bytes`, in order (a partial word at the end is none).
pub(crate) fn u64s<'a, E: Endian + 'a>(
    bytes: &'a [u8],
    endian: E,
) -> impl Iterator<Item = u64> + 'a {
    bytes
        .as_chunks::<8>()
        .0
        .iter()
        .map(move |w| endian.read_u64(*w))
}

/// Rounds `n` up to a multiple of 8.
pub(crate) fn align8(n: u64) -> u64 {
    n.saturating_add(7) & !7
}
