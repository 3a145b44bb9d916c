//! `bport record`: perf's record flags → `perf::record::Config`; renders the outcome as perf's summary.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::ui::Ui;
use super::{CliError, CliResult};
use crate::perf::abi::KernelVersion;
use crate::perf::record::{self, CallGraph, Config, Event, Sampling, Target};

/// Record a profile into perf.data (the file Linux perf reads), with perf's flags.
///
/// Runs COMMAND and samples it and its children, or attaches to a process (-p) or thread (-t), or samples every
/// CPU (-a) until COMMAND exits or Ctrl-C. The negotiation with the kernel (attr size, features, cycles →
/// cpu-clock without a PMU) is reported on stderr; --kernel V restricts the recording to what kernel V offers, so
/// the file is what a recording on that kernel would give.
///
/// Example: bport record -F 999 --call-graph dwarf -o chain.data -- ./chain-nofp 2000
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Sample frequency in Hz.
    #[arg(
        short = 'F',
        long = "freq",
        value_name = "HZ",
        conflicts_with = "count"
    )]
    pub freq: Option<u64>,

    /// Sample every PERIOD events instead of at a frequency.
    #[arg(short = 'c', long = "count", value_name = "PERIOD")]
    pub count: Option<u64>,

    /// Event to sample: cpu-clock, task-clock, cycles (falls back to cpu-clock without a PMU), instructions, or
    /// tracepoints SYS:NAME (repeat -e or separate with commas, e.g. -e sched:sched_switch,lock:contention_begin;
    /// globs as perf takes them, e.g. -e 'probe_prog:*' or -e 'sched:sched_w*'; every sample is taken, as perf's
    /// -c 1 default for tracepoints).
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        default_value = "cycles",
        action = clap::ArgAction::Append
    )]
    pub event: Vec<String>,

    /// Sample every CPU (system-wide) until COMMAND exits or Ctrl-C.
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "tid"])]
    pub all_cpus: bool,

    /// Attach to every thread of an existing process.
    #[arg(short = 'p', long = "pid", value_name = "PID", conflicts_with = "tid")]
    pub pid: Option<u32>,

    /// Attach to one existing thread.
    #[arg(short = 't', long = "tid", value_name = "TID")]
    pub tid: Option<u32>,

    /// Record callchains by frame pointers (same as --call-graph fp).
    #[arg(short = 'g')]
    pub g: bool,

    /// Callchain mode: fp, dwarf[,SIZE] (SIZE = bytes of user stack per sample, default 8192) or lbr.
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,

    /// Output file; an existing one is kept as FILE.old. `-` writes pipe-mode perf.data to stdout (the
    /// command's own output then goes to stderr), as `perf record -o -` does.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "perf.data"
    )]
    pub output: PathBuf,

    /// Ring-buffer data pages per event (a power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    pub mmap_pages: Option<usize>,

    /// Record only with what kernel VERSION's perf ABI offers (attr size, flags, sample fields, record types,
    /// header features), e.g. 4.1 or 5.14.0-331.el9.
    #[arg(long = "kernel", value_name = "VERSION")]
    pub kernel: Option<String>,

    /// The command to run and profile.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Parses `--call-graph` as perf does: `fp`, `dwarf`, `dwarf,SIZE`, `lbr`.
pub fn parse_call_graph(text: &str) -> Result<CallGraph, String> {
    let (mode, size) = match text.split_once(',') {
        Some((m, s)) => (m, Some(s)),
        None => (text, None),
    };
    match (mode, size) {
        ("fp", None) => Ok(CallGraph::FramePointer),
        ("lbr", None) => Ok(CallGraph::Lbr),
        ("dwarf", None) => Ok(CallGraph::Dwarf {
            stack_size: CallGraph::DEFAULT_DWARF_STACK,
        }),
        ("dwarf", Some(size)) => {
            let n: u32 = size
                .parse()
                .map_err(|_| format!("dwarf stack size {size:?} is not a number of bytes"))?;
            // perf rounds up to a multiple of 8 and caps below 64 KiB (the kernel's u16 record size).
            let rounded = n.next_multiple_of(8);
            if n == 0 || rounded > 65528 {
                return Err(format!(
                    "dwarf stack size must be between 1 and 65528 bytes, not {n}"
                ));
            }
            Ok(CallGraph::Dwarf {
                stack_size: rounded,
            })
        }
        _ => Err(format!(
            "unknown --call-graph mode {text:?}: use fp, dwarf[,SIZE] or lbr"
        )),
    }
}

impl RecordArgs {
    /// Validates the flags into the library's config.
    pub fn to_config(&self) -> CliResult<Config> {
        let (event, tracepoints) = parse_events(&self.event)?;
        let command = (!self.command.is_empty()).then(|| self.command.clone());
        let target = match (self.all_cpus, self.pid, self.tid, command) {
            (true, None, None, command) => Target::SystemWide(command),
            (false, Some(pid), None, None) => Target::Process(pid),
            (false, None, Some(tid), None) => Target::Thread(tid),
            (false, None, None, Some(command)) => Target::Command(command),
            (false, None, None, None) => {
                return Err(CliError::user("nothing to record")
                    .hint("give a command after --, or -p PID, -t TID or -a")
                    .hint("example: bport record -g -- ./my-program args"))
            }
            _ => {
                return Err(CliError::user(
                    "-p/-t attach to an existing task; they take no command",
                )
                .hint("drop the command, or drop -p/-t"))
            }
        };
        let sampling = match (self.freq, self.count) {
            (Some(0), _) | (_, Some(0)) => {
                return Err(CliError::user("-F and -c must be greater than 0"))
            }
            (Some(hz), _) => Sampling::Frequency(hz),
            (None, Some(period)) => Sampling::Period(period),
            // perf samples every tracepoint hit unless told otherwise (its `-c 1` default for tracepoints).
            (None, None) if event == Event::Tracepoint => Sampling::Period(1),
            (None, None) => Sampling::default(),
        };
        let call_graph = match (&self.call_graph, self.g) {
            (Some(mode), _) => parse_call_graph(mode).map_err(CliError::user)?,
            (None, true) => CallGraph::FramePointer,
            (None, false) => CallGraph::None,
        };
        if let Some(pages) = self.mmap_pages {
            if !pages.is_power_of_two() {
                return Err(CliError::user(format!(
                    "-m {pages}: the number of pages must be a power of two"
                )));
            }
        }
        let kernel = match &self.kernel {
            Some(v) => Some(v.parse::<KernelVersion>().map_err(|e| {
                CliError::user(format!("--kernel {v:?}: {e}"))
                    .hint("give a version such as 4.1, 4.1.15 or 5.14.0-331.el9")
            })?),
            None => None,
        };
        let mut config = Config::new(target);
        config.event = event;
        config.tracepoints = tracepoints;
        config.sampling = sampling;
        config.call_graph = call_graph;
        config.output = self.output.clone();
        config.mmap_pages = self.mmap_pages;
        config.kernel = kernel;
        config.handle_sigint = true;
        config.cmdline = std::env::args().collect();
        Ok(config)
    }
}

/// The `-e` values (each a comma list): one hardware/software event, or any number of tracepoints (looked up in
/// tracefs, which is mounted when needed; `SYS:NAME` globs such as `probe_prog:*` expand as perf expands them).
fn parse_events(values: &[String]) -> CliResult<(Event, Vec<record::Tracepoint>)> {
    let names: Vec<&str> = values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    // clap drops the `cycles` default as soon as one -e is given, so every name here was asked for.
    let mut plain = Vec::new();
    let mut tps = Vec::new();
    for name in &names {
        match Event::from_name(name) {
            Some(e) => plain.push(e),
            None if name.contains(':') => tps.push(*name),
            None => {
                return Err(CliError::user(format!("unknown event {name:?}")).hint(
                    "bport record samples on cpu-clock, task-clock, cycles, instructions or tracepoints SYS:NAME",
                ))
            }
        }
    }
    match (plain.as_slice(), tps.is_empty()) {
        ([e], true) => Ok((*e, Vec::new())),
        ([], false) => {
            let tracefs = crate::perf::trace::Tracefs::find_or_mount()?;
            let mut out = Vec::new();
            for name in tps {
                let tps = record::Tracepoint::resolve_all(&tracefs, name).map_err(|e| {
                    CliError::from(e).hint(format!(
                        "list the tracepoints with: ls {}/events/SYSTEM",
                        tracefs.root().display()
                    ))
                })?;
                for tp in tps {
                    if !out.contains(&tp) {
                        out.push(tp);
                    }
                }
            }
            Ok((Event::Tracepoint, out))
        }
        ([], true) => Err(CliError::user("no event given to -e")),
        _ => Err(CliError::user(
            "bport record takes either one hardware/software event or tracepoints, not several or a mix",
        )
        .hint("record the tracepoints and the profile into two files")),
    }
}

/// Runs `bport record`.
pub fn run(args: RecordArgs, ui: &Ui) -> CliResult {
    let config = args.to_config()?;
    let outcome = if config.output.as_os_str() == record::PIPE_OUTPUT {
        // `-o -`: pipe-mode perf.data on stdout, as `perf record -o -` writes it (for `| perf script -i -`).
        use std::os::fd::AsFd;
        let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
        record::record_to_pipe(&config, std::io::BufWriter::with_capacity(1 << 16, stdout))
    } else {
        record::record(&config)
    }
    .map_err(CliError::from)?;
    for note in &outcome.notes {
        ui.status(format!("note: {note}"));
    }
    if let Some(old) = &outcome.kept_old {
        ui.status(format!("note: kept the previous file as {}", old.display()));
    }
    if outcome.lost > 0 {
        ui.warn(format!(
            "lost {} events in {} chunks: the buffers overflowed (try a larger -m or a lower -F)",
            outcome.lost, outcome.lost_records
        ));
    }
    if outcome.records_dropped > 0 {
        ui.status(format!(
            "note: left out {} records whose type the --kernel target's perf does not know",
            outcome.records_dropped
        ));
    }
    if let Some(record::ChildExit::Code(code)) = outcome.exit {
        if code != 0 {
            ui.warn(format!("the command exited with status {code}"));
        }
    }
    ui.status(format!(
        "[ bport record: Woken up {} times to write data ]",
        outcome.wakeups
    ));
    ui.status(format!(
        "[ bport record: Captured and wrote {:.3} MB {} ({} samples) ]",
        outcome.bytes_written as f64 / (1024.0 * 1024.0),
        outcome.path.display(),
        outcome.samples
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_graph_modes_parse_as_perf_spells_them() {
        assert_eq!(parse_call_graph("fp"), Ok(CallGraph::FramePointer));
        assert_eq!(parse_call_graph("lbr"), Ok(CallGraph::Lbr));
        assert_eq!(
            parse_call_graph("dwarf"),
            Ok(CallGraph::Dwarf { stack_size: 8192 })
        );
        assert_eq!(
            parse_call_graph("dwarf,16384"),
            Ok(CallGraph::Dwarf { stack_size: 16384 })
        );
        assert_eq!(
            parse_call_graph("dwarf,100"),
            Ok(CallGraph::Dwarf { stack_size: 104 })
        );
        assert_eq!(
            parse_call_graph("dwarf,70000"),
            Err("dwarf stack size must be between 1 and 65528 bytes, not 70000".to_string())
        );
        assert_eq!(
            parse_call_graph("frames"),
            Err("unknown --call-graph mode \"frames\": use fp, dwarf[,SIZE] or lbr".to_string())
        );
    }
}
