//! The perf.data format, read and write, mirrored (tools/perf/Documentation/perf.data-file-format.txt,
//! tools/perf/util/{header,session}.c, include/uapi/linux/perf_event.h).
//!
//! Owns: the file and pipe headers, `perf_event_attr` by its own size ([`attr`]), every record's layout
//! ([`records`], [`sample`]), the feature sections ([`features`]), the [`reader`] ([`PerfFile`]) and the
//! [`writer`] ([`PerfFileWriter`]). Does not own: what the numbers mean per kernel version — that is
//! [`crate::perf::abi`], which the writer asks to cap its output to a target's era.
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

pub mod attr;
mod compressed;
mod cursor;
pub mod features;
mod iter;
mod prefetch;
pub mod reader;
pub mod records;
pub mod sample;
pub mod writer;

pub use attr::PerfEventAttr;
pub use features::{BuildIdEntry, EventDesc, Features, NrCpus};
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

/// Why a perf.data file could not be read (or read further).
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
    #[error("not a perf.data file: the magic at offset 0 is {found:?}, expected \"PERFILE2\" (or \"2ELIFREP\", \"PERFFILE\")")]
    BadMagic {
        /// The bytes found (lossy text).
        found: String,
    },
    /// A structure runs past the end of the file or of its enclosing section.
    #[error("{what} at offset {offset:#x} needs {needed} bytes but only {available} remain; the file is truncated or corrupt")]
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
    /// A value in the file is impossible (a size below the minimum, an offset outside the file, …).
    #[error("{what} at offset {offset:#x}: {reason}")]
    Invalid {
        /// What was being read.
        what: &'static str,
        /// Where it is in the file.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
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
            ReadError::Truncated { offset, .. } | ReadError::Invalid { offset, .. } => {
                Some(*offset)
            }
            _ => None,
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
            Some(o) => write!(f, "{} (offset {o:#x})", self.message),
            None => f.write_str(&self.message),
        }
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
