//! One recording run: open the events for the target, describe what already exists, start the command, then
//! drain every ring buffer until the command exits, the attached task ends or Ctrl-C; finally count and hand
//! everything to the file writer.
//!
//! The loop (perf's `record__mmap_read_all` + `FINISHED_ROUND`): each pass drains every ring completely and ends
//! with a FINISHED_ROUND record when it wrote anything, which tells readers that no record of a later pass is older
//! than the records before the marker, so they can sort in bounded memory. Rings wake the loop at a quarter full
//! (watermark); a 100 ms poll timeout bounds the delay when they fill slowly.

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::attr;
use super::dsos::{self, DsoTracker};
use super::open;
use super::ring::{RawData, Ring};
use super::synth::{self, Framing};
use super::{CallGraph, Config, Error, Event, Target};
use crate::perf::abi::{self, KernelAbi};
use crate::perf::data::PerfEventAttr;
use crate::perf::sys::{self, ChildExit, EventFd, PausedChild};

/// Where records go; implemented over the perf.data writer (and by tests over a Vec).
pub trait Sink {
    /// One complete record (header included, native endian).
    fn record(&mut self, bytes: &[u8]) -> Result<(), Error>;
    /// A FINISHED_ROUND marker.
    fn finished_round(&mut self) -> Result<(), Error>;
}

/// The counts of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Samples written.
    pub samples: u64,
    /// Events lost (sum over LOST records).
    pub lost: u64,
    /// LOST records.
    pub lost_records: u64,
    /// Passes that found data.
    pub wakeups: u64,
    /// Records left out because the target ABI does not know their type.
    pub records_dropped: u64,
}

/// A build-id entry for the BUILD_ID feature: perf writes pid -1 (the host) for every DSO.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// PERF_RECORD_MISC_KERNEL or PERF_RECORD_MISC_USER.
    pub misc: u16,
    /// The build-id bytes (20 for SHA-1 ids).
    pub build_id: Vec<u8>,
    /// The DSO path, or `[kernel.kallsyms]`.
    pub filename: String,
}

/// Events opened and buffers mapped, nothing started yet.
#[derive(Debug)]
pub struct Session {
    /// The attr the kernel accepted.
    pub attr: PerfEventAttr,
    /// The event in use (after fallbacks).
    pub event: Event,
    /// Event ids (PERF_EVENT_IOC_ID), one per descriptor, for the attr section.
    pub ids: Vec<u64>,
    /// What negotiation changed.
    pub notes: Vec<String>,
    /// The further events of a multi-event recording (`-e a,b,c` tracepoints): each attr with its ids. They
    /// share the first event's rings and sample layout; only the first one carries the side-band flags.
    pub extra: Vec<(PerfEventAttr, Vec<u64>)>,
    extra_fds: Vec<EventFd>,
    target: Target,
    abi: KernelAbi,
    fds: Vec<EventFd>,
    rings: Vec<Ring>,
    child: Option<PausedChild>,
    framing: Framing,
    tracker: DsoTracker,
    stats: Stats,
    scratch: Vec<u8>,
}

/// Opens the tracepoints after the first at every place the first one is open, each writing into the ring of
/// its CPU (or of its place, for per-task events). Their attrs are the first one's with another `config` and
/// without the side-band flags, as perf puts tracking on one event only.
type Extra = (Vec<(PerfEventAttr, Vec<u64>)>, Vec<EventFd>);
fn open_extra(
    config: &Config,
    first: &PerfEventAttr,
    fds: &[EventFd],
    places: &[(i32, i32)],
    owner_of_cpu: &std::collections::HashMap<i32, usize>,
) -> Result<Extra, Error> {
    let mut extra = Vec::new();
    let mut extra_fds = Vec::new();
    if config.event != Event::Tracepoint {
        return Ok((extra, extra_fds));
    }
    for tp in config.tracepoints.iter().skip(1) {
        let mut attr = first.clone();
        attr.config = tp.id;
        attr.flags &= !(abi::ATTR_FLAG_MMAP
            | abi::ATTR_FLAG_MMAP2
            | abi::ATTR_FLAG_MMAP_DATA
            | abi::ATTR_FLAG_COMM
            | abi::ATTR_FLAG_COMM_EXEC
            | abi::ATTR_FLAG_TASK);
        let mut ids = Vec::new();
        for (i, &(pid, cpu)) in places.iter().enumerate() {
            let mut buf = attr::encode(&attr);
            let fd = match sys::perf_event_open(&mut buf, pid, cpu) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) && pid > 0 => continue,
                Err(source) => {
                    return Err(Error::Open {
                        event: "tracepoint",
                        tried: format!("{} on pid {pid} cpu {cpu}", tp.full_name()),
                        source,
                    })
                }
            };
            // The ring this place writes to: its CPU's owner, or (per-task) the first event's descriptor here.
            let target = if cpu >= 0 {
                owner_of_cpu.get(&cpu).map(|&o| &fds[o])
            } else {
                fds.get(i)
            };
            if let Some(t) = target {
                fd.set_output(t).map_err(|source| Error::System {
                    what: "redirecting a tracepoint into its CPU's ring buffer",
                    source,
                })?;
            }
            if let Ok(id) = fd.id() {
                ids.push(id);
            }
            extra_fds.push(fd);
        }
        extra.push((attr, ids));
    }
    Ok((extra, extra_fds))
}

/// What [`Session::run`] returns.
#[derive(Debug)]
pub struct RunOutcome {
    /// Counts.
    pub stats: Stats,
    /// How the command ended.
    pub exit: Option<ChildExit>,
    /// Build-ids of DSOs with samples.
    pub build_ids: Vec<BuildIdEntry>,
}

impl Session {
    /// Opens the events for `config` (capped to `abi`), maps the rings and forks the command (paused).
    pub fn open(config: &Config, abi: &KernelAbi) -> Result<Session, Error> {
        let pages = config.mmap_pages.unwrap_or(match config.call_graph {
            CallGraph::Dwarf { .. } => 512,
            _ => 128,
        });
        if !pages.is_power_of_two() {
            return Err(Error::InvalidConfig(format!(
                "-m must be a power of two, not {pages}"
            )));
        }
        let data_bytes = pages * sys::page_size();
        let mut notes = Vec::new();
        let mut attr = open::initial_attr(config, data_bytes);
        open::apply_target(&mut attr, config, abi, &mut notes)?;

        let stdout_to_stderr = config.output.as_os_str() == super::PIPE_OUTPUT;
        let (places, child) = places(&config.target, stdout_to_stderr)?;
        let (first_pid, first_cpu) = places[0];
        let (first, attr, event) = open::open_negotiated(
            attr,
            config.event,
            config.call_graph,
            first_pid,
            first_cpu,
            &mut notes,
        )?;
        let (fds, fd_cpus) = open_rest(first, first_cpu, &attr, &event, &places[1..])?;
        let (rings, owner_of_cpu) = map_rings(&fds, &fd_cpus, pages)?;
        let (extra, extra_fds) = open_extra(config, &attr, &fds, &places, &owner_of_cpu)?;
        // PERF_EVENT_IOC_ID is 3.12+; without ids the reader maps every sample to the only attr, which is right.
        let ids = fds.iter().filter_map(|fd| fd.id().ok()).collect::<Vec<_>>();
        let ids = if ids.len() == fds.len() {
            ids
        } else {
            Vec::new()
        };
        let framing = Framing {
            sample_type: attr.sample_type,
            sample_id_all: attr.has_flag(abi::ATTR_FLAG_SAMPLE_ID_ALL),
            mmap2: attr.has_flag(abi::ATTR_FLAG_MMAP2),
            mmap_data: attr.has_flag(abi::ATTR_FLAG_MMAP_DATA),
            id: ids.first().copied().unwrap_or(0),
        };
        Ok(Session {
            tracker: DsoTracker::new(attr.sample_type),
            attr,
            event,
            ids,
            notes,
            extra,
            extra_fds,
            target: config.target.clone(),
            abi: abi.clone(),
            fds,
            rings,
            child,
            framing,
            stats: Stats::default(),
            scratch: Vec::new(),
        })
    }

    /// Synthesizes the existing state, starts sampling, drains until the end, and collects build-ids.
    /// `stop` ends the run early (Ctrl-C).
    pub fn run(
        mut self,
        sink: &mut dyn Sink,
        stop: Option<&AtomicBool>,
    ) -> Result<RunOutcome, Error> {
        self.synthesize(sink)?;
        let enable_on_exec = self.attr.has_flag(abi::ATTR_FLAG_ENABLE_ON_EXEC);
        if !enable_on_exec {
            for fd in self.fds.iter().chain(&self.extra_fds) {
                fd.enable().map_err(|source| Error::System {
                    what: "enabling the event",
                    source,
                })?;
            }
        }
        let child_pid = self.child.as_ref().map(|c| c.pid);
        let program = match &self.target {
            Target::Command(argv) | Target::SystemWide(Some(argv)) => argv.first().cloned(),
            _ => None,
        };
        if let Some(child) = self.child.take() {
            let pid = child.pid;
            if let Err(source) = child.start() {
                // The child reported the exec error and exited; reap it.
                let _ = sys::wait(pid);
                return Err(Error::Exec {
                    program: program.unwrap_or_default(),
                    source,
                });
            }
        }
        // A milestone for whoever coordinates with a recording from outside (a test starting a child of an attached
        // process): side-band records (COMM, MMAP) of an event reach the file only once it is enabled.
        log::info!("sampling enabled ({} events)", self.fds.len());
        match self.drive(sink, stop, child_pid) {
            Ok(exit) => {
                let build_ids = self.build_ids();
                Ok(RunOutcome {
                    stats: self.stats,
                    exit,
                    build_ids,
                })
            }
            Err(e) => {
                // Never leave the workload running behind a failed recording (a library caller would not know).
                if let Some(pid) = child_pid {
                    if sys::try_wait(pid).ok().flatten().is_none() {
                        let _ = sys::kill(pid, libc::SIGKILL);
                        let _ = sys::wait(pid);
                    }
                }
                Err(e)
            }
        }
    }

    /// The poll loop, until the end; returns how the command ended.
    fn drive(
        &mut self,
        sink: &mut dyn Sink,
        stop: Option<&AtomicBool>,
        child_pid: Option<i32>,
    ) -> Result<Option<ChildExit>, Error> {
        let mut pollfds: Vec<libc::pollfd> = self
            .fds
            .iter()
            .map(|fd| libc::pollfd {
                fd: fd.raw(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut exit = None;
        let mut terminated = false;
        loop {
            sys::poll(&mut pollfds, 100).map_err(|source| Error::System {
                what: "poll",
                source,
            })?;
            self.drain_all(sink)?;
            if let Some(pid) = child_pid {
                if exit.is_none() {
                    exit = sys::try_wait(pid).map_err(|source| Error::System {
                        what: "waitpid",
                        source,
                    })?;
                }
                if exit.is_some() {
                    break;
                }
            } else if matches!(self.target, Target::Process(_) | Target::Thread(_))
                && pollfds.iter().all(|p| p.revents & libc::POLLHUP != 0)
            {
                break; // every attached thread has exited
            }
            if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
                match child_pid {
                    // The workload usually got the same SIGINT from the terminal; make sure, then wait for it.
                    Some(pid) if !terminated => {
                        let _ = sys::kill(pid, libc::SIGTERM);
                        terminated = true;
                    }
                    Some(_) => {}
                    None => break,
                }
            }
        }
        for fd in self.fds.iter().chain(&self.extra_fds) {
            let _ = fd.disable();
        }
        self.drain_all(sink)?;
        Ok(exit)
    }

    fn synthesize(&mut self, sink: &mut dyn Sink) -> Result<(), Error> {
        let proc_root = Path::new("/proc");
        let mut records = Vec::new();
        match std::fs::read_to_string("/proc/kallsyms")
            .ok()
            .and_then(|k| synth::kernel_text_address(&k))
        {
            Some(text) => records.push(self.framing.kernel_mmap(text)),
            None => {
                let note = "kernel addresses are hidden (/proc/kallsyms shows zeros; kernel.kptr_restrict): no kernel map".to_string();
                log::info!("{note}");
                self.notes.push(note);
            }
        }
        match &self.target {
            Target::Command(_) => {} // the exec itself produces its COMM and MMAPs
            Target::Process(pid) => records.extend(self.framing.process(proc_root, *pid, true)),
            Target::Thread(tid) => {
                let tgid = tgid_of(*tid).unwrap_or(*tid);
                records.extend(self.framing.process(proc_root, tgid, true));
            }
            Target::SystemWide(_) => {
                for pid in synth::list_numeric(proc_root).unwrap_or_default() {
                    records.extend(self.framing.process(proc_root, pid, true));
                }
            }
        }
        for r in &records {
            self.handle(&RawData::Single(r), sink)?;
        }
        if !records.is_empty() {
            sink.finished_round()?;
        }
        Ok(())
    }

    fn drain_all(&mut self, sink: &mut dyn Sink) -> Result<(), Error> {
        let samples_before = self.stats.samples;
        let mut wrote = false;
        let mut rings = std::mem::take(&mut self.rings);
        let mut result = Ok(());
        for ring in &mut rings {
            let mut failed = None;
            let drained = ring.drain(|raw| {
                if failed.is_none() {
                    if let Err(e) = self.handle(&raw, sink) {
                        failed = Some(e);
                    }
                }
            });
            match (drained, failed) {
                (_, Some(e)) => {
                    result = Err(e);
                    break;
                }
                (Err(f), None) => {
                    result = Err(Error::Framing {
                        position: f.position,
                        size: f.size,
                    });
                    break;
                }
                (Ok(n), None) => wrote |= n > 0,
            }
        }
        self.rings = rings;
        result?;
        if wrote {
            self.stats.wakeups += 1;
            sink.finished_round()?;
        }
        if samples_before == 0 && self.stats.samples > 0 {
            // A milestone for whoever drives a recording from outside (the Ctrl-C test waits for it): from here on,
            // an interrupt leaves a file with samples. Before it, the events may not even be enabled yet (a
            // system-wide /proc synthesis can take seconds on a loaded machine).
            log::info!("first samples recorded ({})", self.stats.samples);
        }
        Ok(())
    }

    fn handle(&mut self, raw: &RawData<'_>, sink: &mut dyn Sink) -> Result<(), Error> {
        let ty = raw.record_type();
        // Uncapped, every record the kernel wrote is kept (even types bport does not know: newer readers may).
        if self.abi.version.is_some() && !self.abi.supports_record(ty) {
            self.stats.records_dropped += 1;
            return Ok(());
        }
        match ty {
            abi::PERF_RECORD_SAMPLE => self.stats.samples += 1,
            abi::PERF_RECORD_LOST => {
                self.stats.lost_records += 1;
                self.stats.lost += raw.u64_at(16).unwrap_or(0);
            }
            _ => {}
        }
        self.tracker.observe(raw);
        let bytes = raw.contiguous(&mut self.scratch);
        sink.record(bytes)
    }

    fn build_ids(&self) -> Vec<BuildIdEntry> {
        let mut out = Vec::new();
        if self.tracker.kernel_hit() {
            if let Some(id) = std::fs::read("/sys/kernel/notes")
                .ok()
                .and_then(|n| crate::perf::symbols::kallsyms::build_id_from_notes(&n))
            {
                out.push(BuildIdEntry {
                    misc: abi::PERF_RECORD_MISC_KERNEL,
                    build_id: id,
                    filename: dsos::KERNEL_DSO.to_string(),
                });
            }
        }
        if self.tracker.vdso_hit() {
            if let Some(id) = dsos::vdso_build_id() {
                out.push(BuildIdEntry {
                    misc: abi::PERF_RECORD_MISC_USER,
                    build_id: id,
                    filename: dsos::VDSO.to_string(),
                });
            }
        }
        for path in self.tracker.user_hits() {
            if let Some(id) = dsos::elf_build_id(Path::new(path)) {
                out.push(BuildIdEntry {
                    misc: abi::PERF_RECORD_MISC_USER,
                    build_id: id,
                    filename: path.to_string(),
                });
            }
        }
        out
    }
}

fn tgid_of(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// (pid, cpu) pairs and the forked command, if any.
type Places = (Vec<(i32, i32)>, Option<PausedChild>);

/// The (pid, cpu) pairs to open events on, and the command forked first when the target runs one (its pid is the
/// events' target).
fn places(target: &Target, stdout_to_stderr: bool) -> Result<Places, Error> {
    let cpus = || {
        sys::online_cpus().map_err(|source| Error::System {
            what: "reading the online CPUs",
            source,
        })
    };
    Ok(match target {
        Target::Command(argv) => {
            let c = fork_command(argv, stdout_to_stderr)?;
            let pid = c.pid;
            let places = cpus()?.into_iter().map(|cpu| (pid, cpu as i32)).collect();
            (places, Some(c))
        }
        Target::SystemWide(command) => {
            let child = match command {
                Some(argv) => Some(fork_command(argv, stdout_to_stderr)?),
                None => None,
            };
            (
                cpus()?.into_iter().map(|cpu| (-1, cpu as i32)).collect(),
                child,
            )
        }
        Target::Process(pid) => {
            let tids = synth::list_numeric(&Path::new("/proc").join(pid.to_string()).join("task"))
                .map_err(|_| Error::NoSuchTask { pid: *pid })?;
            // Inherited events must be per CPU (the kernel refuses to map an inherited per-task event): one
            // event per thread and CPU, all of a CPU's events writing into one ring (SET_OUTPUT in map_rings).
            let cpus = cpus()?;
            let places = tids
                .into_iter()
                .flat_map(|tid| cpus.iter().map(move |&cpu| (tid as i32, cpu as i32)))
                .collect();
            (places, None)
        }
        Target::Thread(tid) => (vec![(*tid as i32, -1)], None),
    })
}

/// Opens the event at every place after the first with the attr the first negotiated; returns every fd (the
/// first included) with its CPU.
fn open_rest(
    first: EventFd,
    first_cpu: i32,
    attr: &PerfEventAttr,
    event: &Event,
    rest: &[(i32, i32)],
) -> Result<(Vec<EventFd>, Vec<i32>), Error> {
    let mut fds = vec![first];
    let mut fd_cpus = vec![first_cpu];
    for &(pid, cpu) in rest {
        let mut buf = attr::encode(attr);
        match sys::perf_event_open(&mut buf, pid, cpu) {
            Ok(fd) => {
                fds.push(fd);
                fd_cpus.push(cpu);
            }
            // A thread of an attached process may exit between listing and opening.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) && pid > 0 => {}
            Err(source) => {
                return Err(Error::Open {
                    event: event.name(),
                    tried: format!("pid {pid} cpu {cpu} with the negotiated attr"),
                    source,
                })
            }
        }
    }
    Ok((fds, fd_cpus))
}

/// One ring per CPU: the first event on a CPU owns it, the others redirect into it. Per-task events (cpu -1) each
/// get their own. Returns the rings and, per CPU, the index of the fd that owns its ring.
fn map_rings(
    fds: &[EventFd],
    fd_cpus: &[i32],
    pages: usize,
) -> Result<(Vec<Ring>, std::collections::HashMap<i32, usize>), Error> {
    let mut rings = Vec::new();
    let mut owner_of_cpu = std::collections::HashMap::new();
    for (i, fd) in fds.iter().enumerate() {
        let cpu = fd_cpus[i];
        if cpu >= 0 {
            if let Some(&owner) = owner_of_cpu.get(&cpu) {
                if fd.set_output(&fds[owner]).is_ok() {
                    continue;
                }
            }
        }
        let map = sys::RingMap::new(fd, pages).map_err(|source| Error::Mmap { pages, source })?;
        rings.push(Ring::new(map));
        owner_of_cpu.entry(cpu).or_insert(i);
    }
    Ok((rings, owner_of_cpu))
}

/// Resolves `argv[0]` on PATH (before fork: the child may not allocate) and forks it paused.
fn fork_command(argv: &[OsString], stdout_to_stderr: bool) -> Result<PausedChild, Error> {
    let command = sys::Command::new(argv).map_err(|e| match e {
        sys::CommandError::Empty => Error::InvalidConfig("an empty command".into()),
        sys::CommandError::Exec { program, source } => Error::Exec { program, source },
    })?;
    command
        .fork_paused(stdout_to_stderr)
        .map_err(|source| Error::System {
            what: "fork",
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::workloads::Build;

    #[derive(Default)]
    struct VecSink {
        records: Vec<Vec<u8>>,
        rounds: usize,
    }

    impl Sink for VecSink {
        fn record(&mut self, bytes: &[u8]) -> Result<(), Error> {
            self.records.push(bytes.to_vec());
            Ok(())
        }
        fn finished_round(&mut self) -> Result<(), Error> {
            self.rounds += 1;
            Ok(())
        }
    }

    fn u32_at(r: &[u8], o: usize) -> u32 {
        u32::from_ne_bytes(r[o..o + 4].try_into().unwrap())
    }

    #[test]
    fn recording_the_fp_workload_yields_its_exec_comm_maps_and_samples() {
        let dir = tempfile::tempdir().unwrap();
        let exe = Build::FramePointer.write_to(dir.path()).unwrap();
        let mut config = Config::new(Target::Command(vec![exe.clone().into(), "300".into()]));
        config.event = Event::CpuClock;
        config.sampling = super::super::Sampling::Frequency(999);
        config.call_graph = CallGraph::FramePointer;
        let session = Session::open(&config, &KernelAbi::newest()).unwrap();
        let mut sink = VecSink::default();
        let out = session.run(&mut sink, None).unwrap();
        assert_eq!(out.exit, Some(ChildExit::Code(0)));
        let comms: Vec<&Vec<u8>> = sink
            .records
            .iter()
            .filter(|r| u32_at(r, 0) == abi::PERF_RECORD_COMM)
            .collect();
        let exec_comm = comms
            .iter()
            .find(|r| r[16..25] == *b"chain-fp\0")
            .expect("the exec's COMM record");
        let child = u32_at(exec_comm, 8);
        // The exec COMM carries PERF_RECORD_MISC_COMM_EXEC (comm_exec, 3.16).
        assert_eq!(
            u16::from_ne_bytes([exec_comm[4], exec_comm[5]]) & abi::PERF_RECORD_MISC_COMM_EXEC,
            abi::PERF_RECORD_MISC_COMM_EXEC
        );
        let samples: Vec<&Vec<u8>> = sink
            .records
            .iter()
            .filter(|r| u32_at(r, 0) == abi::PERF_RECORD_SAMPLE)
            .collect();
        assert_eq!(samples.len() as u64, out.stats.samples);
        assert_eq!(out.stats.lost, 0);
        // Every sample is the child's (perf record -- CMD semantics: the recorder itself is not sampled).
        assert!(
            samples.iter().all(|s| u32_at(s, 16) == child),
            "samples of other tasks"
        );
        assert!(
            !samples.is_empty(),
            "no samples: the all() above would be vacuous"
        );
        let exe_str = exe.to_str().unwrap();
        assert!(
            out.build_ids
                .iter()
                .any(|b| b.filename == exe_str && b.build_id.len() == 20),
            "{:?}",
            out.build_ids
        );
        assert!(sink.rounds >= 1);
    }
}
