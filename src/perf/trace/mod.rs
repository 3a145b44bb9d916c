//! Tracepoints: tracefs (finding and mounting it, event ids and `format` files), the `format` parser, field
//! decoding from `PERF_SAMPLE_RAW` bytes, `print fmt` rendering as `perf script` prints it, and perf's tracing-data
//! feature section (HEADER_TRACING_DATA) that carries the formats inside a perf.data file.
//!
//! Shared by `record` (`-e SYS:NAME`), `script` (the trace line), `lock` (contention_begin/end fields) and `probe`
//! (uprobe/kprobe definitions through [`Tracefs::write_control`]). Imports nothing above `perf`; the one system
//! call it needs (mounting tracefs) is `perf::sys`'s.
//!
//! Reading a recorded tracepoint sample's fields:
//!
//! ```no_run
//! use bport::perf::trace::{Tracefs, decode};
//! let tracefs = Tracefs::find_or_mount()?;
//! let format = tracefs.format("sched", "sched_switch")?;
//! # let raw: &[u8] = &[];
//! let next = format.field("next_comm").expect("a sched_switch field");
//! let value = decode::decode(next, raw, object::Endianness::Little)?;
//! # Ok::<(), bport::perf::trace::Error>(())
//! ```

pub mod decode;
pub(crate) mod format;
pub(crate) mod print;
pub(crate) mod tracefs;
pub(crate) mod tracing_data;

use std::path::PathBuf;

pub use decode::Value;
pub use format::{EventFormat, Field};
pub use print::PrintFmt;
pub use tracefs::Tracefs;
pub use tracing_data::TracingData;

/// A tracepoint failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No tracefs is mounted and mounting one failed.
    #[error(
        "tracefs is not mounted and mounting it at {} failed (mount it with `mount -t tracefs nodev {}` as root, \
         or check that the kernel has CONFIG_FTRACE/CONFIG_TRACING)",
        path.display(), path.display()
    )]
    Mount {
        /// Where bport tried.
        path: PathBuf,
        /// The errno.
        #[source]
        source: std::io::Error,
    },
    /// The event does not exist in this kernel's tracefs.
    #[error("no tracepoint {event} in {} (list them with `ls {}/events`)", tracefs.display(), tracefs.display())]
    NoSuchEvent {
        /// `sys:name`.
        event: String,
        /// The tracefs directory looked in.
        tracefs: PathBuf,
    },
    /// A glob (`probe_prog:*`) that names no event.
    #[error("no tracepoint matches {pattern} in {} (list them with `ls {}/events`)", tracefs.display(), tracefs.display())]
    NoMatchingEvent {
        /// `sys:glob`.
        pattern: String,
        /// The tracefs directory looked in.
        tracefs: PathBuf,
    },
    /// An event name that is not `SYS:NAME`, or that would leave the events directory.
    #[error("{0:?} is not a tracepoint name (expected SYS:NAME, e.g. sched:sched_switch)")]
    BadName(String),
    /// A tracefs file could not be read or written.
    #[error("cannot access {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused a line written to a control file.
    #[error("the kernel refused {line:?} in {}{}", path.display(), kernel_says.as_ref().map(|k| format!(": {k}")).unwrap_or_default())]
    Control {
        /// The control file.
        path: PathBuf,
        /// The line.
        line: String,
        /// The kernel's `error_log` entry, if any.
        kernel_says: Option<String>,
        /// The errno.
        #[source]
        source: std::io::Error,
    },
    /// A `format` file (or the copy of one in a perf.data file) is damaged.
    #[error("bad event format {what}, line {line}: {reason}")]
    Format {
        /// Which event or file.
        what: String,
        /// The line number (0: the file as a whole).
        line: usize,
        /// What was wrong.
        reason: String,
    },
    /// A field could not be decoded from a record.
    #[error("cannot decode field {field}: {reason}")]
    Decode {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// The tracing-data section is damaged.
    #[error("bad tracing data at byte {offset}: {reason}")]
    TracingData {
        /// Offset in the section.
        offset: usize,
        /// What was wrong.
        reason: String,
    },
}

/// Splits `sys:name` (perf also accepts `sys/name/`... only the colon form is supported here).
pub fn split_name(event: &str) -> Result<(&str, &str), Error> {
    match event.split_once(':') {
        Some((s, n)) if !s.is_empty() && !n.is_empty() && !n.contains(':') => Ok((s, n)),
        _ => Err(Error::BadName(event.to_string())),
    }
}

/// An event's format with its print fmt parsed once, ready to print records.
#[derive(Clone, Debug)]
pub struct Printer {
    /// The event.
    pub format: EventFormat,
    /// The parsed print fmt, or why it could not be parsed (then records print as perf's fallback).
    pub print: Result<PrintFmt, String>,
}

impl Printer {
    /// Parses the print fmt of `format`.
    pub fn new(format: EventFormat) -> Printer {
        let print = PrintFmt::parse(&format.print_fmt);
        Printer { format, print }
    }

    /// The trace line of one raw record, as `perf script` prints it after the event name.
    pub fn line(&self, raw: &[u8], endian: object::Endianness) -> String {
        match &self.print {
            Ok(p) => p
                .render(&self.format, raw, endian)
                .unwrap_or_else(|_| print::render_fields(&self.format, raw, endian)),
            Err(_) => print::render_fields(&self.format, raw, endian),
        }
    }
}

/// The tracepoint formats a perf.data file carries (its HEADER_TRACING_DATA section), by event id, ready to
/// print samples.
#[derive(Clone, Debug, Default)]
pub struct FileEvents {
    by_id: std::collections::HashMap<u64, (String, Printer)>,
    endian: Option<object::Endianness>,
}

impl FileEvents {
    /// From a file's features; empty when the file has no tracing data (no tracepoint events).
    pub fn from_features(features: &crate::perf::data::Features) -> Result<FileEvents, Error> {
        match features
            .other
            .iter()
            .find(|(id, _)| *id == crate::perf::abi::HEADER_TRACING_DATA)
        {
            Some((_, bytes)) => FileEvents::from_tracing_data(&TracingData::parse(bytes)?.0),
            None => Ok(FileEvents::default()),
        }
    }

    /// From a decoded tracing-data section (also the body of pipe mode's HEADER_TRACING_DATA record).
    pub fn from_tracing_data(td: &TracingData) -> Result<FileEvents, Error> {
        let by_id = td
            .formats()?
            .into_iter()
            .map(|(sys, f)| (f.id, (sys, Printer::new(f))))
            .collect();
        Ok(FileEvents {
            by_id,
            endian: Some(td.endian()),
        })
    }

    /// The event with tracepoint id `id` (an attr's `config` when its type is `PERF_TYPE_TRACEPOINT`): its
    /// system and printer.
    pub fn get(&self, id: u64) -> Option<(&str, &Printer)> {
        self.by_id.get(&id).map(|(s, p)| (s.as_str(), p))
    }

    /// Whether the file had no tracing data.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The trace line of a RAW payload of event `id`, or `None` for an unknown id.
    pub fn line(&self, id: u64, raw: &[u8]) -> Option<String> {
        let (_, p) = self.by_id.get(&id)?;
        Some(p.line(raw, self.endian.unwrap_or(object::Endianness::Little)))
    }
}
