//! The perf.data format, read and write, mirrored (tools/perf/Documentation/perf.data-file-format.txt,
//! tools/perf/util/{header,session}.c, include/uapi/linux/perf_event.h).
//!
//! Owns: the file and pipe headers, `perf_event_attr` by its own size ([`attr`]), every record's layout
//! ([`records`], [`sample`]), the feature sections ([`features`]), the [`reader`] ([`PerfFile`]) and the
//! [`writer`] ([`PerfFileWriter`]). Does not own: what the numbers mean per kernel version — that is
//! [`crate::perf::abi`], which the writer asks to cap its output to a target's era.
//!
//! The files, bottom up; each imports only those above it in this list, so the imports form a tree
//! (tests/it/architecture/ fails on a loop):
//! - [`map`]: the read-only file map and the release of its pages — every `unsafe` of this module, behind the
//!   safe [`map::FileMap`] that the symbolizer maps DSOs with too.
//! - `cursor`: bounds-checked reads of one byte order.
//! - `raw`: record framing (a record's header and body at an offset), what is lost when records cannot be
//!   followed, the warning helper.
//! - [`attr`], [`features`]: `perf_event_attr` and the feature sections.
//! - [`records`] (the record types), [`sample`] (sample layouts and bodies), `codec` (every record parsed from and
//!   encoded to bytes, so reader and writer cannot drift apart).
//! - `compressed` (`perf record -z` payloads, decoded once) and `prefetch` (pages faulted in ahead of the reader,
//!   released behind it).
//! - `source`: what the record iterator reads from — the bytes, the data section, which attr a record belongs
//!   to, the decoded and prefetch state.
//! - `iter` ([`Records`]: file order or perf's time order), then [`reader`] ([`PerfFile`]: headers, attrs,
//!   features, pipe-mode prescan) on top; [`writer`] beside it.
//!
//! Byte order is decided once from the magic (`PERFILE2` on disk from little-endian writers, `2ELIFREP` from
//! big-endian ones); below that the code is generic over `object::endian::Endian`. Records borrow from the file
//! map; nothing is copied until a caller asks for an owned value. Every length and offset read from a file is
//! checked before use: a bad file gives a [`ReadError`] naming the offset, or a [`Warning`] and the records before
//! the damage — never a panic.
//!
//! ```
//! use bport::perf::abi::*;
//! use bport::perf::data::{Features, PerfEventAttr, PerfFile, PerfFileWriter, Record, SampleId, WriterOptions};
//!
//! // Write: attrs first, then records (typed, or raw from the ring buffer), then features.
//! let attr = PerfEventAttr {
//!     type_: PERF_TYPE_SOFTWARE,
//!     config: PERF_COUNT_SW_CPU_CLOCK,
//!     sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
//!     flags: ATTR_FLAG_SAMPLE_ID_ALL,
//!     ..Default::default()
//! };
//! let opts = WriterOptions::for_kernel(&"4.1".parse().unwrap());
//! let mut w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), opts).unwrap();
//! w.add_attr(&attr, &[42]).unwrap();
//! w.write_comm(7, 7, b"chain-fp", true, SampleId::default()).unwrap();
//! let features = Features { hostname: Some("box".into()), ..Default::default() };
//! let (out, outcome) = w.finish(&features).unwrap();
//! assert_eq!(outcome.records, 1);
//!
//! // Read: records in time order, borrowed from the bytes.
//! let file = PerfFile::from_bytes(out.into_inner()).unwrap();
//! assert_eq!(file.attrs()[0].ids, [42]);
//! assert_eq!(file.features().hostname.as_deref(), Some("box"));
//! for record in file.records() {
//!     match record.unwrap() {
//!         Record::Comm(c) => assert_eq!(c.comm, b"chain-fp"),
//!         Record::Sample(s) => println!("{:?} {:?}", s.ip, s.callchain.map(|c| c.to_vec())),
//!         _ => {}
//!     }
//! }
//! ```

pub(crate) mod attr;
mod codec;
mod compressed;
mod cursor;
pub(crate) mod features;
mod iter;
pub(crate) mod map;
mod prefetch;
mod raw;
pub(crate) mod reader;
pub(crate) mod records;
pub(crate) mod sample;
mod source;
pub(crate) mod writer;

pub use attr::PerfEventAttr;
pub(crate) use cursor::{u16_at, u32_at, u64_at};
pub use features::{BuildIdEntry, EventDesc, Features, GroupDesc, NrCpus};
pub use iter::Records;
pub use object::endian::Endianness;
pub use reader::{AttrEntry, PerfFile};
pub use records::{
    BranchEntry, BranchStack, CommRecord, FixedRecord, ForkRecord, LostRecord, Mmap2Inode,
    Mmap2Record, MmapRecord, RawRecord, Record, RecordMeta, Regs, SampleId, SampleRecord,
    StackUser, ThrottleRecord, U64s,
};
pub use writer::{PerfFileWriter, WriteOutcome, WriterOptions};

use std::path::PathBuf;

/// Why a perf.data file could not be read (or read further). The messages are sentences about the user's file:
/// where (byte offsets, decimal, as `ls -l` counts), what was expected, and what was lost; a length or offset that
/// is garbage is called that, not printed as a 20-digit number.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened, mapped or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file has no bytes at all.
    #[error("the file is empty (0 bytes); was `perf record` stopped before it wrote anything?")]
    Empty,
    /// The first 8 bytes are not a perf.data magic.
    #[error("not a perf.data file: it starts with {}, not the magic \"PERFILE2\" of a file `perf record` writes", show_magic(magic))]
    BadMagic {
        /// The first 8 bytes of the file.
        magic: [u8; 8],
    },
    /// A structure runs past the end of the file or of its enclosing section.
    #[error("{}", truncated(what, *offset, *needed, *available))]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it starts in the file.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are.
        available: u64,
    },
    /// A section the header lists lies (partly) outside the file.
    #[error("{}", outside(what, *offset, *size, *file_len))]
    OutsideFile {
        /// Which section (`attr ids`, `feature section`, …).
        what: &'static str,
        /// The offset the header states.
        offset: u64,
        /// The size the header states.
        size: u64,
        /// The file's length.
        file_len: u64,
    },
    /// The records could not be followed past `offset`: what is wrong there, and how much of the data is lost.
    #[error("{cause}; the {lost} bytes of records from byte {offset} on ({} of the data) are lost", share(*lost, *data_len))]
    RecordsLost {
        /// Where the damage starts (a record's start).
        offset: u64,
        /// Bytes of the data section from `offset` on.
        lost: u64,
        /// Bytes of the whole data section.
        data_len: u64,
        /// What is wrong at `offset`.
        cause: Box<ReadError>,
    },
    /// A value in the file is impossible (a size below the minimum, an offset outside the file, …).
    #[error("{what} at byte {offset}: {reason}")]
    Invalid {
        /// What was being read.
        what: &'static str,
        /// Where it is in the file.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
}

/// A length or offset no real perf.data file comes near (512 GiB): garbage, not a truncation.
pub(crate) const IMPLAUSIBLE: u64 = 1 << 39;

fn show_magic(magic: &[u8; 8]) -> String {
    let hex: Vec<String> = magic.iter().map(|b| format!("{b:02x}")).collect();
    let text: String = magic
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    format!("the bytes {} (\"{text}\")", hex.join(" "))
}

fn truncated(what: &str, offset: u64, needed: u64, available: u64) -> String {
    if needed >= IMPLAUSIBLE {
        return format!(
            "the {what} at byte {offset} states a length that cannot be right (more than 512 GiB, with {available} \
             bytes left): the bytes there are corrupt"
        );
    }
    let end = offset.saturating_add(available);
    format!("truncated at byte {end}: the {what} at byte {offset} needs {needed} bytes but only {available} are there")
}

fn outside(what: &str, offset: u64, size: u64, file_len: u64) -> String {
    if offset.saturating_add(size) >= IMPLAUSIBLE {
        format!(
            "the {what} section points outside the file: its offset or size in the header is garbage (the file has \
             {file_len} bytes); the header is corrupt"
        )
    } else {
        format!(
            "the {what} section points outside the file: the header puts it at bytes {offset}..{} but the file has \
             {file_len} bytes (the file is truncated, or its header is corrupt)",
            offset + size
        )
    }
}

fn share(lost: u64, total: u64) -> String {
    if total == 0 {
        return "all".into();
    }
    let pct = lost as f64 * 100.0 / total as f64;
    if pct >= 99.95 {
        "all".into()
    } else {
        format!("{pct:.1}%")
    }
}

impl ReadError {
    pub(crate) fn invalid(what: &'static str, offset: u64, reason: impl Into<String>) -> Self {
        ReadError::Invalid {
            what,
            offset,
            reason: reason.into(),
        }
    }

    /// The file offset the error is about, if it names one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            ReadError::Truncated { offset, .. }
            | ReadError::Invalid { offset, .. }
            | ReadError::OutsideFile { offset, .. }
            | ReadError::RecordsLost { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// Whether the file ends before the data it describes (as when `perf record` was killed while writing).
    pub fn is_truncation(&self) -> bool {
        match self {
            ReadError::Truncated { needed, .. } => *needed < IMPLAUSIBLE,
            ReadError::RecordsLost { cause, .. } => cause.is_truncation(),
            _ => false,
        }
    }
}

/// Something the reader skipped or worked around; collected, never printed by the library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// Where in the file, if it is about one place.
    pub offset: Option<u64>,
    /// What happened and what it means for the output.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            // A garbage offset is not worth printing (the message says what is wrong).
            Some(o) if o < IMPLAUSIBLE => write!(f, "{} (offset {o:#x})", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// How many warnings of one kind a [`WarningLog`] keeps word for word; the rest are only counted.
pub const WARNING_EXAMPLES: usize = 10;

/// Warnings, bounded whatever a file holds: a damaged or hostile file can be millions of bad records, and one
/// message kept per record would cost gigabytes. Each kind (a short plural phrase: "records skipped as unparsable")
/// keeps its count and its first [`WARNING_EXAMPLES`] warnings; [`WarningLog::finish`] adds one warning per kind
/// that had more, saying how many were not shown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WarningLog {
    kept: Vec<Warning>,
    counts: Vec<(&'static str, u64)>,
    finished: bool,
}

impl WarningLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a warning of `kind`, and keeps it while the kind has fewer than [`WARNING_EXAMPLES`] kept.
    pub fn push(&mut self, kind: &'static str, warning: Warning) {
        self.push_with(kind, || warning);
    }

    /// [`WarningLog::push`] that makes the warning only when it is kept: formatting millions of messages only
    /// to drop them would be most of the time a hostile file takes.
    pub fn push_with(&mut self, kind: &'static str, warning: impl FnOnce() -> Warning) {
        let n = match self.counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => n,
            None => {
                self.counts.push((kind, 0));
                &mut self.counts.last_mut().expect("just pushed").1
            }
        };
        *n += 1;
        if *n <= WARNING_EXAMPLES as u64 {
            self.kept.push(warning());
        }
    }

    /// Adds, once, a warning per kind that had more than [`WARNING_EXAMPLES`]: how many more there were.
    pub fn finish(&mut self) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        for &(kind, n) in &self.counts {
            if n > WARNING_EXAMPLES as u64 {
                self.kept.push(Warning {
                    offset: None,
                    message: format!(
                        "{} more warnings of {kind} not shown ({n} in all)",
                        n - WARNING_EXAMPLES as u64
                    ),
                });
            }
        }
    }

    /// The warnings kept (and, once finished, the counts of those not kept).
    pub fn as_slice(&self) -> &[Warning] {
        &self.kept
    }

    /// How many warnings of `kind` were pushed, kept or not.
    pub fn count(&self, kind: &str) -> u64 {
        self.counts
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |&(_, n)| n)
    }

    /// How many warnings were pushed in all.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|&(_, n)| n).sum()
    }
}

/// Why a perf.data file could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The output failed.
    #[error("cannot write perf.data: {0}")]
    Io(#[from] std::io::Error),
    /// Something the caller asked for is not part of the target kernel's perf ABI.
    #[error(
        "{what} {value:#x} is not in the perf ABI of {target}; drop it or choose a newer --kernel"
    )]
    NotInAbi {
        /// Which kind of value (attr field, sample_type bits, feature, record type).
        what: &'static str,
        /// The offending value or bits.
        value: u64,
        /// The target ABI's version.
        target: String,
    },
    /// The writer was used out of order or given an impossible value.
    #[error("cannot write perf.data: {0}")]
    Usage(String),
}

#[cfg(test)]
mod tests;
