//! `bport dump`: every record of a perf.data file, one line each with its offset and parsed fields (like
//! `perf report -D`), for debugging files and bport itself. The text is bport's own (no perf output to match): the
//! header's `#` lines, one line per record, then a count per record type.

use crate::perf::abi::{table, *};
use crate::perf::data::{PerfFile, ReadError, Record, SampleRecord, Warning};
use std::io::Write;

/// What to dump.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Records in time order, as `script` sees them (default: file order).
    pub sorted: bool,
    /// Only the header, attrs and features.
    pub header_only: bool,
}

/// What the record pass met besides the records it printed.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The iterator's warnings (records it skipped or reordered), to show after the dump.
    pub warnings: Vec<Warning>,
    /// The error that ended the pass early; every record before it was printed.
    pub failed: Option<ReadError>,
}

/// Writes the header, attrs and features of `file`, then (unless `header_only`) one line per record and a count per
/// record type.
///
/// A damaged record stops the pass without losing the lines already written: it comes back in
/// [`Outcome::failed`], so the caller decides how to report it.
pub fn dump(file: &PerfFile, options: &Options, out: &mut impl Write) -> std::io::Result<Outcome> {
    write_header(file, out)?;
    if options.header_only {
        return Ok(Outcome::default());
    }
    let mut records = if options.sorted {
        file.records()
    } else {
        file.records_in_file_order()
    };
    let mut counts = std::collections::BTreeMap::<u32, u64>::new();
    let mut failed = None;
    for r in records.by_ref() {
        match r {
            Ok(r) => {
                let ty = r.meta().ty;
                // Types perf names are counted each; unknown ones too up to a few hundred, then together (a
                // hostile file can have a million types).
                let key = if counts.len() < MAX_COUNTED_TYPES
                    || counts.contains_key(&ty)
                    || table::record_type_name(ty).is_some()
                {
                    ty
                } else {
                    OTHER_TYPES
                };
                *counts.entry(key).or_default() += 1;
                writeln!(out, "{}", format_record(&r))?;
            }
            Err(e) => failed = Some(e),
        }
    }
    writeln!(out, "# record counts")?;
    for (ty, n) in &counts {
        writeln!(out, "#   {:<20} {n}", type_name(*ty))?;
    }
    Ok(Outcome {
        warnings: records.warnings().to_vec(),
        failed,
    })
}

/// How many record types the summary counts one by one.
const MAX_COUNTED_TYPES: usize = 256;

/// The summary's key for the unknown types past [`MAX_COUNTED_TYPES`] (no record type is this large: the
/// kernel's end below 64, perf's own at 64-100).
const OTHER_TYPES: u32 = u32::MAX;

fn type_name(ty: u32) -> String {
    if ty == OTHER_TYPES {
        return "UNKNOWN(other types)".to_string();
    }
    table::record_type_name(ty).map_or_else(|| format!("UNKNOWN({ty})"), str::to_string)
}

/// The `#` lines: file mode, endianness, data range, one line per attr and per feature section.
pub fn write_header(file: &PerfFile, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "# {} mode, {:?} endian, header size {}, data {:#x}..{:#x}",
        if file.is_pipe() { "pipe" } else { "file" },
        file.endian(),
        file.header_size(),
        file.data_range().start,
        file.data_range().end
    )?;
    for (i, a) in file.attrs().iter().enumerate() {
        let at = &a.attr;
        writeln!(
            out,
            "# attr {i}: name {:?} type {} size {} config {:#x} {} {} sample_type {} read_format {} flags {} branch {} regs_user {:#x} stack_user {} ids {:?}",
            a.name.as_deref().unwrap_or(""),
            at.type_,
            at.size,
            at.config,
            if at.freq() { "freq" } else { "period" },
            at.sample_period_or_freq,
            table::bit_names(table::SAMPLE_TYPES, at.sample_type),
            table::bit_names(table::READ_FORMATS, at.read_format),
            table::bit_names(table::ATTR_FLAGS, at.flags),
            table::bit_names(table::BRANCH_SAMPLE_TYPES, at.branch_sample_type),
            at.sample_regs_user,
            at.sample_stack_user,
            a.ids
        )?;
    }
    let f = file.features();
    for id in file.feature_ids() {
        let name = table::feature_name(*id).unwrap_or("?");
        let value = match *id {
            HEADER_HOSTNAME => format!("{:?}", f.hostname),
            HEADER_OSRELEASE => format!("{:?}", f.osrelease),
            HEADER_VERSION => format!("{:?}", f.version),
            HEADER_ARCH => format!("{:?}", f.arch),
            HEADER_NRCPUS => format!("{:?}", f.nrcpus),
            HEADER_CPUDESC => format!("{:?}", f.cpudesc),
            HEADER_CPUID => format!("{:?}", f.cpuid),
            HEADER_TOTAL_MEM => format!("{:?} kB", f.total_mem),
            HEADER_CMDLINE => format!("{:?}", f.cmdline),
            HEADER_EVENT_DESC => format!(
                "{:?}",
                f.event_desc
                    .iter()
                    .flatten()
                    .map(|e| (&e.name, &e.ids))
                    .collect::<Vec<_>>()
            ),
            HEADER_BUILD_ID => {
                let v: Vec<String> = f
                    .build_ids
                    .iter()
                    .map(|b| format!("{} {}", hex(&b.build_id), b.filename))
                    .collect();
                format!("{v:?}")
            }
            _ => match f.other.iter().find(|(i, _)| i == id) {
                Some((_, d)) => format!("{} bytes (not parsed)", d.len()),
                None => "(not parsed)".into(),
            },
        };
        writeln!(out, "# feature {id} {name}: {value}")?;
    }
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn format_sample(s: &SampleRecord<'_>) -> String {
    let mut parts = vec![format!("attr {}", s.attr_index)];
    let mut opt = |name: &str, v: Option<String>| {
        if let Some(v) = v {
            parts.push(format!("{name} {v}"));
        }
    };
    opt("ip", s.ip.map(|v| format!("{v:#x}")));
    opt("pid", s.pid.map(|v| v.to_string()));
    opt("tid", s.tid.map(|v| v.to_string()));
    opt("time", s.time.map(|v| v.to_string()));
    opt("addr", s.addr.map(|v| format!("{v:#x}")));
    opt("id", s.id.map(|v| v.to_string()));
    opt("stream_id", s.stream_id.map(|v| v.to_string()));
    opt("cpu", s.cpu.map(|v| v.to_string()));
    opt("period", s.period.map(|v| v.to_string()));
    opt("read", s.read.map(|v| format!("{:?}", v.to_vec())));
    opt(
        "callchain",
        s.callchain.map(|c| {
            let v: Vec<String> = c.iter().map(|a| format!("{a:#x}")).collect();
            format!("[{}]", v.join(" "))
        }),
    );
    opt("raw", s.raw.map(|r| format!("{} bytes", r.len())));
    opt(
        "branches",
        s.branch_stack.map(|b| {
            let v: Vec<String> = b
                .iter()
                .map(|e| format!("{:#x}->{:#x}", e.from, e.to))
                .collect();
            format!("[{}]", v.join(" "))
        }),
    );
    opt(
        "regs_user",
        s.regs_user.map(|r| {
            let v: Vec<String> = r.values.iter().map(|a| format!("{a:#x}")).collect();
            format!("abi {} [{}]", r.abi, v.join(" "))
        }),
    );
    opt(
        "stack_user",
        s.stack_user
            .map(|st| format!("{} bytes (dyn {})", st.data.len(), st.dyn_size)),
    );
    opt("weight", s.weight.map(|v| v.to_string()));
    opt("data_src", s.data_src.map(|v| format!("{v:#x}")));
    opt("phys_addr", s.phys_addr.map(|v| format!("{v:#x}")));
    parts.join(" ")
}

/// One line for a record: offset, type name, fields, and the `sample_id` trailer if any.
pub fn format_record(r: &Record<'_>) -> String {
    let meta = r.meta();
    let body = match r {
        Record::Sample(s) => format_sample(s),
        Record::Mmap(m) => format!(
            "{}/{}: [{:#x}({:#x}) @ {:#x}]: {}",
            m.pid,
            m.tid,
            m.addr,
            m.len,
            m.pgoff,
            lossy(m.filename)
        ),
        Record::Mmap2(m) => format!(
            "{}/{}: [{:#x}({:#x}) @ {:#x} {:?} prot {} flags {}]: {}",
            m.pid,
            m.tid,
            m.addr,
            m.len,
            m.pgoff,
            m.inode,
            m.prot,
            m.flags,
            lossy(m.filename)
        ),
        Record::Comm(c) => format!(
            "{}:{}/{}{}",
            lossy(c.comm),
            c.pid,
            c.tid,
            if c.meta.misc & PERF_RECORD_MISC_COMM_EXEC != 0 {
                " exec"
            } else {
                ""
            }
        ),
        Record::Fork(f) | Record::Exit(f) => format!(
            "({}:{}):({}:{}) time {}",
            f.pid, f.tid, f.ppid, f.ptid, f.time
        ),
        Record::Lost(l) => format!("id {} lost {}", l.id, l.lost),
        Record::Throttle(t) | Record::Unthrottle(t) => {
            format!("time {} id {} stream_id {}", t.time, t.id, t.stream_id)
        }
        Record::LostSamples(f)
        | Record::ItraceStart(f)
        | Record::Switch(f)
        | Record::SwitchCpuWide(f)
        | Record::Aux(f)
        | Record::AuxOutputHwId(f) => format!("{:?}", f.fields),
        Record::BpfEvent(raw)
        | Record::OtherKernel(raw)
        | Record::User(raw)
        | Record::Unknown(raw) => {
            format!("{} bytes", raw.body.len())
        }
        Record::FinishedRound(_) | Record::FinishedInit(_) => String::new(),
    };
    let mut line = format!(
        "{:#x} PERF_RECORD_{} misc {:#x}: {}",
        meta.offset,
        type_name(meta.ty),
        meta.misc,
        body
    );
    let s = meta.sample_id;
    if !matches!(r, Record::Sample(_)) && s != Default::default() {
        line.push_str(&format!(
            " | sample_id pid {:?} tid {:?} time {:?} id {:?} cpu {:?}",
            s.pid, s.tid, s.time, s.id, s.cpu
        ));
    }
    line
}
