//! Recording: `perf_event_open`, ring buffers, /proc synthesis; writes perf.data through `perf::data`.
//!
//! Entry point: [`record`] takes a [`Config`] (what perf's `record` flags say) and returns an [`Outcome`] (what
//! perf's summary says) or an [`Error`] whose variants carry what the user needs to fix it (the
//! `perf_event_paranoid` value, the missing hardware, the kernel version).
//!
//! Layers, bottom up, over `perf::sys` (the system calls: perf_event_open, mmap, fork/exec): [`ring`]
//! (records borrowed from the mapping), [`attr`] (the attr bytes and ABI negotiation), [`open`] (opening with
//! fallbacks), [`synth`] (/proc → COMM/FORK/MMAP records), [`dsos`] (build-ids of hit DSOs), [`session`] (the
//! poll loop), [`host`] (the machine's header features) and [`output`] (the session into a perf.data file). Does
//! not own the file format: records go to `perf::data`'s writer as bytes.
//!
//! Recording a workload as a 4.1 kernel would allow (what `verify` does):
//!
//! ```no_run
//! use bport::perf::record::{self, CallGraph, Config, Event, Sampling, Target};
//!
//! let mut config = Config::new(Target::Command(vec!["./chain-nofp".into(), "1000".into()]));
//! config.event = Event::CpuClock;
//! config.sampling = Sampling::Frequency(999);
//! config.call_graph = CallGraph::Dwarf { stack_size: CallGraph::DEFAULT_DWARF_STACK };
//! config.kernel = Some("4.1".parse().expect("a kernel version"));
//! config.output = "chain.data".into();
//! let outcome = record::record(&config)?; // Error::ModeUnsupported / LbrUnavailable: the mode cannot work
//! println!("{} samples, {} lost, {} bytes", outcome.samples, outcome.lost, outcome.bytes_written);
//! # Ok::<(), record::Error>(())
//! ```

pub(crate) mod attr;
pub(crate) mod dsos;
pub(crate) mod host;
pub(crate) mod open;
pub(crate) mod output;
pub(crate) mod ring;
pub(crate) mod session;
pub(crate) mod synth;

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;

use crate::perf::abi::KernelVersion;

pub use output::{record, record_to_pipe};

/// The output name that means "pipe-mode perf.data on a stream" (perf: `perf record -o -`).
pub const PIPE_OUTPUT: &str = "-";
pub use session::{BuildIdEntry, Session, Sink, Stats};

/// The event to sample on (`-e`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// `cpu-clock`: a software timer; works everywhere, including VMs without a PMU.
    CpuClock,
    /// `task-clock`: a software timer per task.
    TaskClock,
    /// `cycles`: the hardware cycle counter; falls back to `cpu-clock` without a PMU, as perf does.
    #[default]
    Cycles,
    /// `instructions`: hardware instructions retired (no fallback: a timer measures something else).
    Instructions,
    /// Tracepoints (`-e SYS:NAME`): the events are [`Config::tracepoints`], one attr each.
    Tracepoint,
}

/// A tracepoint to record (`-e SYS:NAME`), with its tracefs id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracepoint {
    /// The system (`sched`).
    pub system: String,
    /// The event (`sched_switch`).
    pub name: String,
    /// The id from tracefs (the attr's `config`).
    pub id: u64,
}

impl Tracepoint {
    /// Looks `SYS:NAME` up in tracefs (mounting it when needed).
    pub fn resolve(
        tracefs: &crate::perf::trace::Tracefs,
        event: &str,
    ) -> Result<Tracepoint, Error> {
        let (system, name) = crate::perf::trace::split_name(event)?;
        let id = tracefs.id(system, name)?;
        Ok(Tracepoint {
            system: system.to_string(),
            name: name.to_string(),
            id,
        })
    }

    /// Every tracepoint `SYS:NAME` names, where either part may be a glob (`probe_prog:*`), in perf's order; an
    /// error when a glob matches nothing.
    pub fn resolve_all(
        tracefs: &crate::perf::trace::Tracefs,
        event: &str,
    ) -> Result<Vec<Tracepoint>, Error> {
        let (system, name) = crate::perf::trace::split_name(event)?;
        if !crate::perf::trace::tracefs::is_glob(system)
            && !crate::perf::trace::tracefs::is_glob(name)
        {
            return Ok(vec![Tracepoint::resolve(tracefs, event)?]);
        }
        let mut out = Vec::new();
        for (system, name) in tracefs.matching_events(system, name)? {
            let id = tracefs.id(&system, &name)?;
            out.push(Tracepoint { system, name, id });
        }
        Ok(out)
    }

    /// `sys:name`, as perf names the event.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.system, self.name)
    }
}

impl Event {
    /// perf's name of the event.
    pub fn name(self) -> &'static str {
        match self {
            Event::CpuClock => "cpu-clock",
            Event::TaskClock => "task-clock",
            Event::Cycles => "cycles",
            Event::Instructions => "instructions",
            Event::Tracepoint => "tracepoint",
        }
    }

    /// Parses perf's names (`cpu-clock`, `task-clock`, `cycles`, `instructions`, with perf's `:u`-less aliases
    /// `cpu-cycles`).
    pub fn from_name(name: &str) -> Option<Event> {
        Some(match name {
            "cpu-clock" => Event::CpuClock,
            "task-clock" => Event::TaskClock,
            "cycles" | "cpu-cycles" => Event::Cycles,
            "instructions" => Event::Instructions,
            _ => return None,
        })
    }

    fn is_hardware(self) -> bool {
        matches!(self, Event::Cycles | Event::Instructions)
    }
}

/// How often to sample (`-F` / `-c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Samples per second (`-F`); the kernel adjusts the period.
    Frequency(u64),
    /// One sample every N events (`-c`).
    Period(u64),
}

impl Default for Sampling {
    /// perf's default: 4000 Hz.
    fn default() -> Self {
        Sampling::Frequency(4000)
    }
}

/// The callchain mode (`-g`, `--call-graph`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CallGraph {
    /// No callchains.
    #[default]
    None,
    /// The kernel walks frame pointers (`-g`, `--call-graph fp`).
    FramePointer,
    /// User registers and a copy of the user stack per sample, unwound later with DWARF CFI
    /// (`--call-graph dwarf[,SIZE]`).
    Dwarf {
        /// Bytes of stack copied per sample (8-aligned, below 65536; perf's default is 8192).
        stack_size: u32,
    },
    /// Last Branch Record call stacks (`--call-graph lbr`): needs Intel LBR hardware and Linux 4.1.
    Lbr,
}

impl CallGraph {
    /// perf's default DWARF stack copy size.
    pub const DEFAULT_DWARF_STACK: u32 = 8192;

    /// The mode's name as perf spells it.
    pub fn name(self) -> &'static str {
        match self {
            CallGraph::None => "none",
            CallGraph::FramePointer => "fp",
            CallGraph::Dwarf { .. } => "dwarf",
            CallGraph::Lbr => "lbr",
        }
    }
}

/// Whose samples to take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Run this command (program, then arguments) and follow it and its children (`-- CMD ARGS`).
    Command(Vec<OsString>),
    /// Every thread of an existing process (`-p PID`).
    Process(u32),
    /// One existing thread (`-t TID`).
    Thread(u32),
    /// Every CPU, every task (`-a`), until the command (if any) exits or Ctrl-C.
    SystemWide(Option<Vec<OsString>>),
}

/// What to record and where: the options of perf's `record`.
#[derive(Clone, Debug)]
pub struct Config {
    /// Whose samples.
    pub target: Target,
    /// The event (`-e`).
    pub event: Event,
    /// Frequency or period (`-F` / `-c`).
    pub sampling: Sampling,
    /// Callchain mode.
    pub call_graph: CallGraph,
    /// Output file (`-o`); an existing file is kept as `<file>.old`, as perf does. [`PIPE_OUTPUT`] (`-`) means
    /// a pipe-mode stream written by [`record_to_pipe`], during which the command's stdout goes to stderr.
    pub output: PathBuf,
    /// Data pages per ring buffer (`-m`, a power of two); `None` picks 128 (512 KiB, perf's default for root),
    /// or 512 in DWARF mode, whose samples are ~70 times larger.
    pub mmap_pages: Option<usize>,
    /// Cap everything to this kernel's ABI (`--kernel`), even on a newer kernel.
    pub kernel: Option<KernelVersion>,
    /// End on SIGINT (Ctrl-C) or SIGTERM by installing a flag-setting handler: for the CLI. Library callers that run a
    /// command to completion leave it off.
    pub handle_sigint: bool,
    /// The command line to store in the CMDLINE feature (what the user typed).
    pub cmdline: Vec<String>,
    /// With `event` [`Event::Tracepoint`]: the tracepoints, in `-e` order (at least one).
    pub tracepoints: Vec<Tracepoint>,
}

impl Config {
    /// A config for `target` with perf's defaults (cycles at 4000 Hz, no callchains, `perf.data`).
    pub fn new(target: Target) -> Config {
        Config {
            target,
            event: Event::default(),
            sampling: Sampling::default(),
            call_graph: CallGraph::None,
            output: PathBuf::from("perf.data"),
            mmap_pages: None,
            kernel: None,
            handle_sigint: false,
            cmdline: Vec::new(),
            tracepoints: Vec::new(),
        }
    }
}

/// How a recorded command ended.
pub use crate::perf::sys::ChildExit;

/// What a recording did: the numbers of perf's summary plus what the negotiation changed.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Outcome {
    /// The file written.
    pub path: PathBuf,
    /// Where the previous file went (`perf.data.old`), if there was one.
    pub kept_old: Option<PathBuf>,
    /// Bytes of the finished file.
    pub bytes_written: u64,
    /// PERF_RECORD_SAMPLE records written.
    pub samples: u64,
    /// Events the kernel reported lost (sum of PERF_RECORD_LOST counts): 0 means nothing was dropped.
    pub lost: u64,
    /// PERF_RECORD_LOST records (each covers `lost / lost_records` events on average).
    pub lost_records: u64,
    /// Poll wake-ups that found data ("Woken up N times to write data").
    pub wakeups: u64,
    /// The event actually sampled (after a fallback).
    pub event: Event,
    /// The attr size the kernel accepted.
    pub attr_size: u32,
    /// Records the target ABI would not know, left out of the file (counted, never silently).
    pub records_dropped: u64,
    /// What negotiation and fallbacks changed, in order (also logged at info level).
    pub notes: Vec<String>,
    /// How the command ended, when there was one.
    pub exit: Option<ChildExit>,
}

/// A recording failure, with what the user needs to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel refused access (EACCES/EPERM).
    #[error(
        "perf_event_open was denied: kernel.perf_event_paranoid is {}, this recording needs {needed} or lower \
         (or root / CAP_PERFMON)",
        paranoid.map_or("unreadable".to_string(), |p| p.to_string())
    )]
    PermissionDenied {
        /// `/proc/sys/kernel/perf_event_paranoid`, if readable.
        paranoid: Option<i32>,
        /// The paranoid level that allows this recording for an unprivileged user: 0 for system-wide (`-a`),
        /// 1 with kernel samples, 2 for user space only (perf_event_open(2), "perf_event_paranoid").
        needed: i32,
        /// The errno.
        #[source]
        source: io::Error,
    },
    /// LBR callchains were asked for where they cannot work.
    #[error("LBR call stacks are not available: {reason}")]
    LbrUnavailable {
        /// Why (no PMU, CPU without LBR, kernel too old).
        reason: String,
    },
    /// The callchain mode needs sample fields the target kernel lacks.
    #[error("--call-graph {mode} is not available on Linux {kernel}: {reason}")]
    ModeUnsupported {
        /// The mode (`dwarf`, `lbr`).
        mode: &'static str,
        /// The target kernel version.
        kernel: String,
        /// What is missing.
        reason: String,
    },
    /// A hardware event on a machine (or VM) without the PMU to count it.
    #[error("the {event} event is not available here: {reason}")]
    EventUnavailable {
        /// The event.
        event: &'static str,
        /// Why.
        reason: String,
    },
    /// The event could not be opened and no fallback applied.
    #[error("cannot open event {event} (tried: {tried})")]
    Open {
        /// The event.
        event: &'static str,
        /// What negotiation already tried.
        tried: String,
        /// The last errno.
        #[source]
        source: io::Error,
    },
    /// The process or thread to attach to does not exist.
    #[error("no such process or thread: {pid}")]
    NoSuchTask {
        /// The pid/tid given.
        pid: u32,
    },
    /// The command was not found on PATH or is not executable.
    #[error("cannot run {program:?}")]
    Exec {
        /// The program as given.
        program: OsString,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The ring buffer could not be mapped.
    #[error("cannot map a {pages}-page ring buffer")]
    Mmap {
        /// Data pages asked for.
        pages: usize,
        /// The errno (ENOMEM/EPERM: over `perf_event_mlock_kb`).
        #[source]
        source: io::Error,
    },
    /// Writing the output file failed.
    #[error("cannot write {path}")]
    Output {
        /// The output file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The perf.data writer failed.
    #[error("writing {path}")]
    Write {
        /// The output file.
        path: PathBuf,
        /// The writer's error.
        #[source]
        source: crate::perf::data::WriteError,
    },
    /// A tracepoint could not be found or its tracing data not read.
    #[error(transparent)]
    Trace(#[from] crate::perf::trace::Error),
    /// The config is contradictory (a library caller's mistake; the CLI validates first).
    #[error("invalid record configuration: {0}")]
    InvalidConfig(String),
    /// A system call of the recording loop failed.
    #[error("{what} failed")]
    System {
        /// What was being done.
        what: &'static str,
        /// The errno.
        #[source]
        source: io::Error,
    },
    /// The ring buffer held a malformed record: a bug (ours or the kernel's), never user input.
    #[error("malformed record in ring buffer at position {position} (size {size})")]
    Framing {
        /// Ring position.
        position: u64,
        /// Header size field.
        size: u16,
    },
}

impl Error {
    /// `kernel.perf_event_paranoid`, for hints.
    pub fn read_paranoid() -> Option<i32> {
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }
}
