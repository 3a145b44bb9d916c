//! Raw record access: a record's header and body at an offset, and what is lost when the records cannot be
//! followed past one. Shared by the reader's pipe-mode prescan, the record iterator and the COMPRESSED decoder,
//! below all three.
//!
//! Owns: record framing (the 8-byte header, the payloads that follow HEADER_TRACING_DATA and AUXTRACE outside
//! their size), the "records lost" verdict, record type labels for messages and the warning helper. Does not own:
//! what a record's body means ([`super::records`]) nor which attr it belongs to ([`super::source`]).

use super::cursor::{align8, Cursor};
use super::{ReadError, Warning, WarningLog};
use crate::perf::abi::*;
use object::endian::Endian;

/// A record's header, its body and where the next record starts.
pub(super) struct RawRec<'a> {
    pub(super) ty: u32,
    pub(super) misc: u16,
    pub(super) body: &'a [u8],
    pub(super) next: usize,
}

/// Kinds of warnings ([`WarningLog`]), as plural phrases for the count of those not shown.
pub(super) mod kind {
    /// Header, attrs and data-section bounds.
    pub(in super::super) const HEADER: &str = "the file's header and attrs";
    /// Feature sections and HEADER_FEATURE records.
    pub(in super::super) const FEATURE: &str = "feature sections";
    /// Records whose body could not be parsed.
    pub(in super::super) const SKIPPED: &str = "records skipped as unparsable";
    /// Records of types this reader does not know.
    pub(in super::super) const UNKNOWN: &str = "records of unknown types";
    /// COMPRESSED records.
    pub(in super::super) const COMPRESSED: &str = "compressed records";
    /// Text after the records.
    pub(in super::super) const TEXT: &str = "text after the records";
}

pub(super) fn warn(
    warnings: &mut WarningLog,
    kind: &'static str,
    offset: Option<u64>,
    message: impl Into<String>,
) {
    warnings.push(
        kind,
        Warning {
            offset,
            message: message.into(),
        },
    );
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
            format!(
                "its size field says {size} bytes, less than the 8-byte header itself (type {ty}), so no record \
                 after it can be found"
            ),
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

/// Why the records cannot be followed past `pos`: `cause`, with how much of the data section (`data`) is lost —
/// or, when the rest of the data is text (perf's stderr redirected into the file, `perf record -o - … > f 2>&1`),
/// a warning saying so, as no recorded data is lost.
pub(super) fn records_lost(
    bytes: &[u8],
    data: std::ops::Range<usize>,
    stated_end: u64,
    pos: usize,
    cause: ReadError,
) -> Result<Warning, ReadError> {
    let rest = bytes.get(pos..data.end).unwrap_or(&[]);
    let printable = rest
        .iter()
        .filter(|&&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
        .count();
    if rest.len() >= 8 && printable * 10 >= rest.len() * 9 {
        let text = String::from_utf8_lossy(rest);
        let first_line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let shown: String = first_line.trim().chars().take(80).collect();
        return Ok(Warning {
            offset: Some(pos as u64),
            message: format!(
                "the last {} bytes of the file are text, not records (\"{shown}\"): was the recording's stderr \
                 redirected into it? Every record before them was read",
                rest.len()
            ),
        });
    }
    let stated_end = stated_end.max(data.end as u64);
    Err(ReadError::RecordsLost {
        offset: pos as u64,
        lost: stated_end.saturating_sub(pos as u64),
        data_len: stated_end.saturating_sub(data.start as u64),
        cause: Box::new(cause),
    })
}

pub(super) fn type_label(ty: u32) -> String {
    table::record_type_name(ty).map_or_else(|| format!("type {ty}"), |n| n.to_string())
}
