//! The library entry point [`record`]: a [`Session`] streamed into a perf.data file through `perf::data`'s
//! writer, with the header features perf writes (BUILD_ID of hit DSOs, HOSTNAME, OSRELEASE, VERSION, ARCH,
//! NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE, EVENT_DESC), capped to the `--kernel` target's era by the writer.
//!
//! The recording is written to a hidden file beside the output and renamed over it only once it is complete: a
//! run that fails (a command that cannot start, a full disk) leaves no half-written perf.data, and an earlier
//! perf.data stays as it was. On success an existing file is kept as `<file>.old`, as perf keeps it. An output
//! that is not a regular file (`/dev/null`, a FIFO) is written in place.

use std::path::{Path, PathBuf};

use super::attr;
use super::host::HostInfo;
use super::session::{Session, Sink};
use super::{Config, Error, Event, Outcome, PIPE_OUTPUT};
use crate::perf::abi::{self, KernelAbi};
use crate::perf::data::{self, Features, NrCpus, PerfEventAttr, PerfFileWriter, WriterOptions};
use crate::perf::trace;

/// Records what `config` says into `config.output` and returns perf's summary numbers.
///
/// This is what `bport record` runs and what `bport verify` calls to record a workload under a kernel ABI cap
/// (set `config.kernel`). It blocks until the command exits (or the attached task ends, or SIGINT or SIGTERM when
/// `config.handle_sigint`). An output of [`PIPE_OUTPUT`] is refused here: that stream is the caller's, see
/// [`record_to_pipe`].
pub fn record(config: &Config) -> Result<Outcome, Error> {
    if config.output.as_os_str() == PIPE_OUTPUT {
        return Err(Error::InvalidConfig(
            "output `-` is a pipe-mode stream: record it with record_to_pipe and the stream to write".into(),
        ));
    }
    let (target, stop) = prepare(config)?;
    // Open first: a permission or LBR error must not have moved the user's previous perf.data aside.
    let session = Session::open(config, &target)?;
    let write_err = write_err(&config.output);
    let partial = partial_path(&config.output);
    let into = partial.as_deref().unwrap_or(&config.output);
    let recorded = (|| {
        let writer = PerfFileWriter::create(into, writer_options(&target)).map_err(write_err)?;
        let (writer, run) = run_session(config, session, writer, stop, false)?;
        let (_, written) = writer.finish(&run.features).map_err(write_err)?;
        let bytes_written = std::fs::metadata(into)
            .map_err(|source| Error::Output {
                path: config.output.clone(),
                source,
            })?
            .len();
        Ok((run, written, bytes_written))
    })();
    let (run, written, bytes_written) = match recorded {
        Ok(r) => r,
        Err(e) => {
            if let Some(p) = &partial {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    };
    let kept_old = match &partial {
        Some(p) => {
            let kept = keep_old(&config.output).inspect_err(|_| {
                let _ = std::fs::remove_file(p);
            })?;
            std::fs::rename(p, &config.output).map_err(|source| Error::Output {
                path: config.output.clone(),
                source,
            })?;
            kept
        }
        None => None,
    };
    Ok(run.outcome(config, kept_old, bytes_written, &written))
}

/// `perf record -o -`: records what `config` says as a pipe-mode stream into `out` (the header, the attrs,
/// the features known at the start, the records, then the build-ids as HEADER_BUILD_ID records), so that
/// `bport record -o - | perf script -i -` works as with perf. `config.output` should be [`PIPE_OUTPUT`]: then the
/// command's stdout goes to stderr instead of into the stream.
pub fn record_to_pipe<W: std::io::Write>(config: &Config, out: W) -> Result<Outcome, Error> {
    let (target, stop) = prepare(config)?;
    let session = Session::open(config, &target)?;
    let write_err = write_err(&config.output);
    let writer =
        PerfFileWriter::new_pipe(CountingWriter { out, bytes: 0 }, writer_options(&target))
            .map_err(write_err)?;
    let (writer, run) = run_session(config, session, writer, stop, true)?;
    let (out, written) = writer.finish_pipe(&run.features).map_err(write_err)?;
    Ok(run.outcome(config, None, out.bytes, &written))
}

/// A stream's writer that counts what went through it (the summary's "wrote N MB" of a pipe).
struct CountingWriter<W> {
    out: W,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

type Stop = Option<&'static std::sync::atomic::AtomicBool>;

fn prepare(config: &Config) -> Result<(KernelAbi, Stop), Error> {
    let target = match &config.kernel {
        Some(v) => KernelAbi::for_version(v),
        None => KernelAbi::newest(),
    };
    let stop = if config.handle_sigint {
        Some(sys_sigint()?)
    } else {
        None
    };
    Ok((target, stop))
}

fn writer_options(target: &KernelAbi) -> WriterOptions {
    WriterOptions {
        abi: target.clone(),
        ..WriterOptions::default()
    }
}

fn write_err(path: &Path) -> impl Fn(data::WriteError) -> Error + Copy + '_ {
    move |source| Error::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// What a session left for the summary and the file's end.
struct Run {
    features: Features,
    notes: Vec<String>,
    event: super::Event,
    attr_size: u32,
    stats: super::session::Stats,
    exit: Option<super::ChildExit>,
}

impl Run {
    fn outcome(
        mut self,
        config: &Config,
        kept_old: Option<PathBuf>,
        bytes_written: u64,
        written: &data::WriteOutcome,
    ) -> Outcome {
        if !written.features_dropped.is_empty() {
            self.notes.push(format!(
                "header features {:?} left out: the --kernel target's perf does not read them",
                written.features_dropped
            ));
        }
        Outcome {
            path: config.output.clone(),
            kept_old,
            bytes_written,
            samples: self.stats.samples,
            lost: self.stats.lost,
            lost_records: self.stats.lost_records,
            wakeups: self.stats.wakeups,
            event: self.event,
            attr_size: self.attr_size,
            records_dropped: self.stats.records_dropped + written.dropped.values().sum::<u64>(),
            notes: self.notes,
            exit: self.exit,
        }
    }
}

/// Writes the attr (in `pipe` mode followed by the features known at the start), runs the session into
/// `writer`, and returns the writer with the features for the file's end.
fn run_session<W: std::io::Write>(
    config: &Config,
    session: Session,
    mut writer: PerfFileWriter<W>,
    stop: Stop,
    pipe: bool,
) -> Result<(PerfFileWriter<W>, Run), Error> {
    let write_err = write_err(&config.output);
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
    if pipe {
        // perf's order: attrs, features, tracing data (a HEADER_TRACING_DATA record), then the records.
        // The vdso's build-id goes out first: perf attaches a `[vdso]` build-id record only to a vdso it has not
        // yet mapped (once it processed the MMAP it looks the vdso up under its own extracted copy's name, so a
        // record at the stream's end named whether the vdso had a build-id by how perf's reader happened to
        // flush its queue). Every process on this kernel maps this same vdso.
        let vdso: Vec<super::BuildIdEntry> = super::dsos::vdso_build_id()
            .map(|build_id| super::BuildIdEntry {
                misc: abi::PERF_RECORD_MISC_USER,
                build_id,
                filename: super::dsos::VDSO.to_string(),
            })
            .into_iter()
            .collect();
        let early = features(config, &events, &vdso);
        writer.write_pipe_features(&early).map_err(write_err)?;
        if let Some(td) = &tracing_data {
            writer.write_pipe_tracing_data(td).map_err(write_err)?;
        }
    }
    let notes = session.notes.clone();
    let mut sink = WriterSink {
        writer,
        path: &config.output,
    };
    let run = session.run(&mut sink, stop)?;
    let mut features = features(config, &events, &run.build_ids);
    if pipe {
        // The rest went out at the start.
        let vdso = super::dsos::VDSO;
        features = Features {
            build_ids: features
                .build_ids
                .into_iter()
                .filter(|b| b.filename != vdso)
                .collect(),
            ..Default::default()
        };
    } else if let Some(td) = tracing_data {
        features.other.push((abi::HEADER_TRACING_DATA, td));
    }
    Ok((
        sink.writer,
        Run {
            features,
            notes,
            event,
            attr_size,
            stats: run.stats,
            exit: run.exit,
        },
    ))
}

fn sys_sigint() -> Result<&'static std::sync::atomic::AtomicBool, Error> {
    crate::perf::sys::stop_flag().map_err(|source| Error::System {
        what: "installing the SIGINT and SIGTERM handlers",
        source,
    })
}

/// Where a recording for `output` is written until it is complete: a hidden file in the same directory (so the
/// rename is atomic), or `None` when `output` exists and is not a regular file (a device or FIFO is written in
/// place, never replaced).
fn partial_path(output: &Path) -> Option<PathBuf> {
    if std::fs::metadata(output).is_ok_and(|m| !m.is_file()) {
        return None;
    }
    let name = output.file_name()?.to_string_lossy();
    Some(output.with_file_name(format!(".{name}.bport-partial-{}", std::process::id())))
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
        // bport records no event groups.
        group_desc: None,
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

struct WriterSink<'p, W: std::io::Write> {
    writer: PerfFileWriter<W>,
    path: &'p Path,
}

impl<W: std::io::Write> Sink for WriterSink<'_, W> {
    fn record(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.writer.write_raw_record(bytes).map_err(|e| self.err(e))
    }

    fn finished_round(&mut self) -> Result<(), Error> {
        self.writer.write_finished_round().map_err(|e| self.err(e))
    }
}

impl<W: std::io::Write> WriterSink<'_, W> {
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
