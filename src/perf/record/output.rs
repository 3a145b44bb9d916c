//! The library entry point [`record`]: a [`Session`] streamed into a perf.data file through `perf::data`'s
//! writer, with the header features perf writes (BUILD_ID of hit DSOs, HOSTNAME, OSRELEASE, VERSION, ARCH,
//! NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE, EVENT_DESC), capped to the `--kernel` target's era by the writer.
//!
//! Like perf, an existing output file is renamed to `<file>.old` first, and the file is written under its final
//! name (perf.data is never half-replaced: the old one is kept until the new one starts).

use std::path::{Path, PathBuf};

use super::attr;
use super::host::HostInfo;
use super::session::{Session, Sink};
use super::{Config, Error, Event, Outcome};
use crate::perf::abi::{self, KernelAbi};
use crate::perf::data::{self, Features, NrCpus, PerfEventAttr, PerfFileWriter, WriterOptions};
use crate::perf::trace;

/// Records what `config` says into `config.output` and returns perf's summary numbers.
///
/// This is what `bport record` runs and what `bport verify` calls to record a workload under a kernel ABI cap
/// (set `config.kernel`). It blocks until the command exits (or the attached task ends, or SIGINT when
/// `config.handle_sigint`).
pub fn record(config: &Config) -> Result<Outcome, Error> {
    let target = match &config.kernel {
        Some(v) => KernelAbi::for_version(v),
        None => KernelAbi::newest(),
    };
    let stop = if config.handle_sigint {
        Some(sys_sigint()?)
    } else {
        None
    };
    // Open first: a permission or LBR error must not have moved the user's previous perf.data aside.
    let session = Session::open(config, &target)?;
    let kept_old = keep_old(&config.output)?;
    let opts = WriterOptions {
        abi: target.clone(),
        ..WriterOptions::default()
    };
    let write_err = |source: data::WriteError| Error::Write {
        path: config.output.clone(),
        source,
    };
    let mut writer = PerfFileWriter::create(&config.output, opts).map_err(write_err)?;
    let file_attr = file_attr(&session.attr);
    writer
        .add_attr(&file_attr, &session.ids)
        .map_err(write_err)?;
    // Each event as the file states it: (attr, name, ids), in `-e` order.
    let mut events = vec![(
        file_attr.clone(),
        match (session.event, config.tracepoints.first()) {
            (Event::Tracepoint, Some(tp)) => tp.full_name(),
            (e, _) => e.name().to_string(),
        },
        session.ids.clone(),
    )];
    for ((attr, ids), tp) in session.extra.iter().zip(config.tracepoints.iter().skip(1)) {
        let a = self::file_attr(attr);
        writer.add_attr(&a, ids).map_err(write_err)?;
        events.push((a, tp.full_name(), ids.clone()));
    }
    let tracing_data = tracing_data(config)?;
    let (attr_size, event) = (session.attr.size, session.event);
    let mut notes = session.notes.clone();
    let mut sink = WriterSink {
        writer,
        path: &config.output,
    };
    let run = session.run(&mut sink, stop)?;
    let mut features = features(config, &events, &run.build_ids);
    if let Some(td) = tracing_data {
        features.other.push((abi::HEADER_TRACING_DATA, td));
    }
    let (_, written) = sink.writer.finish(&features).map_err(write_err)?;
    if !written.features_dropped.is_empty() {
        notes.push(format!(
            "header features {:?} left out: the --kernel target's perf does not read them",
            written.features_dropped
        ));
    }
    let bytes_written = std::fs::metadata(&config.output)
        .map_err(|source| Error::Output {
            path: config.output.clone(),
            source,
        })?
        .len();
    Ok(Outcome {
        path: config.output.clone(),
        kept_old,
        bytes_written,
        samples: run.stats.samples,
        lost: run.stats.lost,
        lost_records: run.stats.lost_records,
        wakeups: run.stats.wakeups,
        event,
        attr_size,
        records_dropped: run.stats.records_dropped + written.dropped.values().sum::<u64>(),
        notes,
        exit: run.exit,
    })
}

fn sys_sigint() -> Result<&'static std::sync::atomic::AtomicBool, Error> {
    super::sys::sigint_flag().map_err(|source| Error::System {
        what: "installing the SIGINT handler",
        source,
    })
}

/// perf's `perf.data` → `perf.data.old` rotation (only for a non-empty existing file, as perf does).
fn keep_old(path: &Path) -> Result<Option<PathBuf>, Error> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() > 0 => {
            let mut old = path.as_os_str().to_owned();
            old.push(".old");
            let old = PathBuf::from(old);
            std::fs::rename(path, &old).map_err(|source| Error::Output {
                path: old.clone(),
                source,
            })?;
            Ok(Some(old))
        }
        _ => Ok(None),
    }
}

/// The attr as the file states it: the kernel's accepted fields, at the smallest layout holding them, so perf
/// versions whose struct is smaller than the newest kernel's still read it (perf 6.1 rejects 136-byte attrs).
fn file_attr(attr: &PerfEventAttr) -> PerfEventAttr {
    // disabled/enable_on_exec describe how we started the event, which perf also records as set.
    PerfEventAttr {
        size: attr::file_size(attr),
        ..attr.clone()
    }
}

/// HEADER_TRACING_DATA for the recorded tracepoints (their formats, so readers elsewhere decode the samples),
/// collected before the run as perf does.
fn tracing_data(config: &Config) -> Result<Option<Vec<u8>>, Error> {
    if config.event != Event::Tracepoint {
        return Ok(None);
    }
    let tracefs = trace::Tracefs::find_or_mount()?;
    let names: Vec<(String, String)> = config
        .tracepoints
        .iter()
        .map(|t| (t.system.clone(), t.name.clone()))
        .collect();
    Ok(Some(trace::TracingData::collect(&tracefs, &names)?.write()))
}

fn features(
    config: &Config,
    events: &[(PerfEventAttr, String, Vec<u64>)],
    build_ids: &[super::BuildIdEntry],
) -> Features {
    let host = HostInfo::current();
    Features {
        build_ids: build_ids
            .iter()
            .map(|b| data::BuildIdEntry {
                misc: b.misc,
                // perf writes the host machine's pid (-1) for every DSO.
                pid: -1,
                build_id: b.build_id.clone(),
                filename: b.filename.clone(),
            })
            .collect(),
        hostname: host.hostname,
        osrelease: host.osrelease,
        version: Some(concat!("bport ", env!("CARGO_PKG_VERSION")).to_string()),
        arch: Some(host.arch),
        nrcpus: Some(NrCpus {
            available: host.cpus_available,
            online: host.cpus_online,
        }),
        cpudesc: host.cpudesc,
        cpuid: host.cpuid,
        total_mem: host.total_mem_kb,
        cmdline: Some(if config.cmdline.is_empty() {
            vec!["bport".to_string(), "record".to_string()]
        } else {
            config.cmdline.clone()
        }),
        event_desc: Some(
            events
                .iter()
                .map(|(attr, name, ids)| data::EventDesc {
                    attr: attr.clone(),
                    name: name.clone(),
                    ids: ids.clone(),
                })
                .collect(),
        ),
        other: Vec::new(),
    }
}

struct WriterSink<'p> {
    writer: PerfFileWriter<std::io::BufWriter<std::fs::File>>,
    path: &'p Path,
}

impl Sink for WriterSink<'_> {
    fn record(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.writer.write_raw_record(bytes).map_err(|e| self.err(e))
    }

    fn finished_round(&mut self) -> Result<(), Error> {
        self.writer.write_finished_round().map_err(|e| self.err(e))
    }
}

impl WriterSink<'_> {
    fn err(&self, source: data::WriteError) -> Error {
        Error::Write {
            path: self.path.to_path_buf(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_attr_is_the_smallest_layout_holding_the_fields() {
        let attr = PerfEventAttr {
            type_: abi::PERF_TYPE_SOFTWARE,
            size: abi::PERF_ATTR_SIZE_NEWEST,
            config: abi::PERF_COUNT_SW_CPU_CLOCK,
            sample_period_or_freq: 999,
            sample_type: abi::PERF_SAMPLE_IP | abi::PERF_SAMPLE_REGS_USER,
            read_format: 0,
            flags: abi::ATTR_FLAG_FREQ,
            wakeup_events_or_watermark: 4096,
            branch_sample_type: 0,
            sample_regs_user: 0xff0fff,
            sample_stack_user: 8192,
            ..Default::default()
        };
        let f = file_attr(&attr);
        assert_eq!((f.size, f.min_size()), (96, 96));
        assert_eq!(
            (
                f.sample_regs_user,
                f.sample_stack_user,
                f.wakeup_events_or_watermark
            ),
            (0xff0fff, 8192, 4096)
        );
    }

    #[test]
    fn an_existing_file_is_kept_as_old_and_an_empty_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("perf.data");
        assert_eq!(keep_old(&p).unwrap(), None);
        std::fs::write(&p, b"").unwrap();
        assert_eq!(keep_old(&p).unwrap(), None);
        std::fs::write(&p, b"x").unwrap();
        assert_eq!(
            keep_old(&p).unwrap(),
            Some(dir.path().join("perf.data.old"))
        );
        assert!(!p.exists());
    }
}
