//! perf's tracing data (the HEADER_TRACING_DATA feature section, and the body of a pipe-mode
//! PERF_RECORD_HEADER_TRACING_DATA record): the tracefs files a reader needs to decode tracepoint samples on
//! another machine. Layout (tools/perf/util/trace-event-info.c writes it, trace-event-read.c reads it; checked
//! byte for byte against a perf 6.1 file):
//!
//! ```text
//! "\x17\x08\x44tracing"  version "0.6\0"  u8 big_endian  u8 sizeof(long)  u32 page_size
//! "header_page\0"  u64 size  bytes        "header_event\0"  u64 size  bytes
//! u32 n  { u64 size  bytes }*n                          (ftrace's own event formats; perf writes none for -e)
//! u32 systems  { "system\0"  u32 n  { u64 size  format }*n }*systems
//! u32 size  kallsyms    u32 size  printk_formats    u64 size  saved_cmdlines (version >= 0.6)
//! ```
//!
//! Numbers are in the byte order the `big_endian` byte states (the writer's native order).

use object::endian::{Endian, Endianness};

use super::format::EventFormat;
use super::tracefs::Tracefs;
use super::Error;

const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";
/// The version perf 4.x-6.x writes.
pub const VERSION: &str = "0.6";

/// The decoded section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TracingData {
    /// The format version (`0.5`, `0.6`).
    pub version: String,
    /// Byte order of the numbers.
    pub big_endian: bool,
    /// `sizeof(long)` of the recording kernel.
    pub long_size: u8,
    /// The recording machine's page size.
    pub page_size: u32,
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// Formats of ftrace's own events (`events/ftrace/*/format`).
    pub ftrace_formats: Vec<Vec<u8>>,
    /// Per system, the `format` files of its recorded events.
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// `/proc/kallsyms` (perf leaves it empty unless asked).
    pub kallsyms: Vec<u8>,
    /// `printk_formats`.
    pub printk_formats: Vec<u8>,
    /// `saved_cmdlines`.
    pub saved_cmdlines: Vec<u8>,
}

struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
    endian: Endianness,
}

impl<'a> Rd<'a> {
    fn err(&self, reason: impl Into<String>) -> Error {
        Error::TracingData {
            offset: self.pos,
            reason: reason.into(),
        }
    }
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], Error> {
        let n =
            usize::try_from(n).map_err(|_| self.err(format!("{what}: size {n} is too large")))?;
        if self.b.len() - self.pos < n {
            return Err(self.err(format!(
                "{what}: {n} bytes needed, {} left",
                self.b.len() - self.pos
            )));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Error> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N as u64, what)?);
        Ok(a)
    }
    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(self.endian.read_u32(self.array(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(self.endian.read_u64(self.array(what)?))
    }
    fn cstr(&mut self, what: &str) -> Result<String, Error> {
        let rest = &self.b[self.pos..];
        let end = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| self.err(format!("{what}: no terminating NUL")))?;
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.pos += end + 1;
        Ok(s)
    }
    fn sized64(&mut self, what: &str) -> Result<Vec<u8>, Error> {
        let n = self.u64(what)?;
        Ok(self.take(n, what)?.to_vec())
    }
    fn sized32(&mut self, what: &str) -> Result<Vec<u8>, Error> {
        let n = self.u32(what)?;
        Ok(self.take(u64::from(n), what)?.to_vec())
    }
    fn named(&mut self, name: &str) -> Result<Vec<u8>, Error> {
        let got = self.cstr(name)?;
        if got != name {
            return Err(self.err(format!("expected {name:?}, found {got:?}")));
        }
        self.sized64(name)
    }
}

/// Counts are read before their items; a count larger than the bytes left cannot be honest.
fn check_count(rd: &Rd<'_>, n: u32, what: &str) -> Result<(), Error> {
    if n as usize > rd.b.len() - rd.pos {
        return Err(rd.err(format!("{what} count {n} exceeds the section")));
    }
    Ok(())
}

impl TracingData {
    /// Reads the section; the size it used is returned too (a pipe-mode record may be padded after it).
    pub fn parse(bytes: &[u8]) -> Result<(TracingData, usize), Error> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(Error::TracingData {
                offset: 0,
                reason: "no \\x17\\x08\\x44tracing magic".into(),
            });
        }
        let mut rd = Rd {
            b: bytes,
            pos: MAGIC.len(),
            endian: Endianness::Little,
        };
        let version = rd.cstr("version")?;
        let flags = rd.take(2, "endianness and long size")?;
        let (big_endian, long_size) = (flags[0] != 0, flags[1]);
        rd.endian = if big_endian {
            Endianness::Big
        } else {
            Endianness::Little
        };
        let page_size = rd.u32("page size")?;
        let header_page = rd.named("header_page")?;
        let header_event = rd.named("header_event")?;
        let n = rd.u32("ftrace format count")?;
        check_count(&rd, n, "ftrace format")?;
        let ftrace_formats = (0..n)
            .map(|_| rd.sized64("ftrace format"))
            .collect::<Result<_, _>>()?;
        let n = rd.u32("system count")?;
        check_count(&rd, n, "system")?;
        let mut systems = Vec::new();
        for _ in 0..n {
            let name = rd.cstr("system name")?;
            let k = rd.u32("event count")?;
            check_count(&rd, k, "event")?;
            let formats = (0..k)
                .map(|_| rd.sized64("event format"))
                .collect::<Result<_, _>>()?;
            systems.push((name, formats));
        }
        let kallsyms = rd.sized32("kallsyms")?;
        let printk_formats = rd.sized32("printk formats")?;
        let new_enough = version
            .split_once('.')
            .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
            .is_some_and(|v| v >= (0, 6));
        let saved_cmdlines = if new_enough && rd.pos < bytes.len() {
            rd.sized64("saved cmdlines")?
        } else {
            Vec::new()
        };
        let used = rd.pos;
        Ok((
            TracingData {
                version,
                big_endian,
                long_size,
                page_size,
                header_page,
                header_event,
                ftrace_formats,
                systems,
                kallsyms,
                printk_formats,
                saved_cmdlines,
            },
            used,
        ))
    }

    /// Encodes the section as perf does, in the byte order `big_endian` says.
    pub fn write(&self) -> Vec<u8> {
        let e = if self.big_endian {
            Endianness::Big
        } else {
            Endianness::Little
        };
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(self.version.as_bytes());
        out.push(0);
        out.push(u8::from(self.big_endian));
        out.push(self.long_size);
        out.extend_from_slice(&e.write_u32(self.page_size));
        let sized64 = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&e.write_u64(b.len() as u64));
            out.extend_from_slice(b);
        };
        let sized32 = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&e.write_u32(b.len() as u32));
            out.extend_from_slice(b);
        };
        out.extend_from_slice(b"header_page\0");
        sized64(&mut out, &self.header_page);
        out.extend_from_slice(b"header_event\0");
        sized64(&mut out, &self.header_event);
        out.extend_from_slice(&e.write_u32(self.ftrace_formats.len() as u32));
        for f in &self.ftrace_formats {
            sized64(&mut out, f);
        }
        out.extend_from_slice(&e.write_u32(self.systems.len() as u32));
        for (name, formats) in &self.systems {
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            out.extend_from_slice(&e.write_u32(formats.len() as u32));
            for f in formats {
                sized64(&mut out, f);
            }
        }
        sized32(&mut out, &self.kallsyms);
        sized32(&mut out, &self.printk_formats);
        sized64(&mut out, &self.saved_cmdlines);
        out
    }

    /// Collects the section for `events` (`(system, name)`) from this machine's tracefs, as `perf record -e`
    /// does: header files, the events' formats grouped by system, `printk_formats`; no kallsyms (perf only adds
    /// it on request) and no ftrace formats.
    pub fn collect(tracefs: &Tracefs, events: &[(String, String)]) -> Result<TracingData, Error> {
        let mut systems: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
        for (sys, name) in events {
            let text = tracefs.format_text(sys, name)?.into_bytes();
            match systems.iter_mut().find(|(s, _)| s == sys) {
                Some((_, v)) => v.push(text),
                None => systems.push((sys.clone(), vec![text])),
            }
        }
        let printk_formats =
            std::fs::read(tracefs.root().join("printk_formats")).unwrap_or_default();
        Ok(TracingData {
            version: VERSION.to_string(),
            big_endian: cfg!(target_endian = "big"),
            long_size: std::mem::size_of::<std::ffi::c_long>() as u8,
            page_size: page_size(),
            header_page: tracefs.events_file("header_page")?.into_bytes(),
            header_event: tracefs.events_file("header_event")?.into_bytes(),
            ftrace_formats: Vec::new(),
            systems,
            kallsyms: Vec::new(),
            printk_formats,
            saved_cmdlines: Vec::new(),
        })
    }

    /// Every event format of the section, parsed, with its system.
    pub fn formats(&self) -> Result<Vec<(String, EventFormat)>, Error> {
        let mut out = Vec::new();
        for (sys, formats) in &self.systems {
            for f in formats {
                let text = String::from_utf8_lossy(f);
                out.push((
                    sys.clone(),
                    EventFormat::parse(&text, &format!("{sys} (tracing data)"))?,
                ));
            }
        }
        Ok(out)
    }

    /// The byte order of the recording machine (and of its raw sample data).
    pub fn endian(&self) -> Endianness {
        if self.big_endian {
            Endianness::Big
        } else {
            Endianness::Little
        }
    }
}

fn page_size() -> u32 {
    // The size perf writes is only used by readers of ftrace's ring-buffer pages, never for perf samples; the
    // header_page file's `data` field size plus its offset states it too.
    4096
}
